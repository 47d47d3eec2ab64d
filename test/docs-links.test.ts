import t from 'tap'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'

const ROOT = new URL('..', import.meta.url).pathname
const PAGES = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((file) => file.endsWith('.md')).map((file) => `docs/${file}`)]

/** Markdown outside code: fenced blocks and inline code spans hold examples, not links. */
function prose (text: string): string {
  return text.replace(/^```[\s\S]*?^```/gm, '').replace(/`[^`\n]*`/g, '')
}

/** The anchors GitHub gives a page's headings: lower case, punctuation dropped, spaces as hyphens, repeats numbered. */
function anchors (text: string): Set<string> {
  const seen = new Map<string, number>()
  const result = new Set<string>()
  for (const [, heading] of text.replace(/^```[\s\S]*?^```/gm, '').matchAll(/^#{1,6} (.+)$/gm)) {
    const slug = heading.trim().toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, '').replace(/ /g, '-')
    const count = seen.get(slug) ?? 0
    seen.set(slug, count + 1)
    result.add(count === 0 ? slug : `${slug}-${count}`)
  }
  return result
}

t.test('every relative link in the README and docs/ names a file that exists, and every #anchor a heading in it', async (t) => {
  let links = 0
  for (const page of PAGES) {
    const text = readFileSync(join(ROOT, page), 'utf8')
    for (const [, target] of prose(text).matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue
      links++
      const [path, anchor] = target.split('#')
      const file = path === '' ? join(ROOT, page) : join(ROOT, dirname(page), path)
      const where = `${page} → ${target}`
      if (!existsSync(file)) {
        t.fail(`${where}: no file ${relative(ROOT, file)}`)
        continue
      }
      if (anchor !== undefined && file.endsWith('.md')) {
        t.ok(anchors(readFileSync(file, 'utf8')).has(anchor), `${where}: a heading with that anchor`)
      }
    }
  }
  t.ok(links > 30, `the pages link to each other (${links} relative links checked)`)
})
