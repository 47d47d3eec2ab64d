/**
 * Just enough XML for Route 53's API: elements, text and the five entities
 * plus numeric references; attributes, comments and declarations are
 * skipped. Route 53's answers are small, namespaced, attribute-free
 * documents, and a full XML parser would be one more dependency for that.
 */
export interface XmlElement { name: string, children: XmlElement[], text: string }

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: '\'' }

function decode (text: string): string {
  return text.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (whole, entity: string) => {
    if (entity.startsWith('#x') || entity.startsWith('#X')) return String.fromCodePoint(parseInt(entity.slice(2), 16))
    if (entity.startsWith('#')) return String.fromCodePoint(Number(entity.slice(1)))
    return ENTITIES[entity] ?? whole
  })
}

export function escapeXml (text: string): string {
  return text.replace(/[<>&"']/g, (char) => `&${Object.entries(ENTITIES).find(([, value]) => value === char)?.[0] ?? 'amp'};`)
}

/** The document's root element; throws on text that is not well-formed enough to read. */
export function parseXml (xml: string): XmlElement {
  const root: XmlElement = { name: '#document', children: [], text: '' }
  const stack: XmlElement[] = [root]
  const tag = /<(\/?)([A-Za-z_][\w.:-]*)[^>]*?(\/?)>|<\?[\s\S]*?\?>|<!--[\s\S]*?-->|<!\[CDATA\[([\s\S]*?)\]\]>|([^<]+)/g
  for (const match of xml.matchAll(tag)) {
    const [, closing, name, selfClosing, cdata, text] = match
    const top = stack[stack.length - 1]
    if (text !== undefined) top.text += decode(text)
    else if (cdata !== undefined) top.text += cdata
    else if (name === undefined) continue
    else if (closing === '/') {
      if (top.name !== name) throw new Error(`XML: </${name}> closes <${top.name}>`)
      stack.pop()
    } else {
      const element: XmlElement = { name, children: [], text: '' }
      top.children.push(element)
      if (selfClosing !== '/') stack.push(element)
    }
  }
  if (stack.length !== 1 || root.children.length !== 1) throw new Error('XML: not one complete root element')
  return root.children[0]
}

export function child (element: XmlElement | undefined, name: string): XmlElement | undefined {
  return element?.children.find((entry) => entry.name === name)
}

export function children (element: XmlElement | undefined, name: string): XmlElement[] {
  return element?.children.filter((entry) => entry.name === name) ?? []
}

export function textOf (element: XmlElement | undefined, name: string): string | undefined {
  return child(element, name)?.text.trim()
}
