import { nestedDeeperThan } from '../platform/nesting.js'
import { isPlainObject } from '../store/semantics/values.js'
import { TRACKER_LIMITS } from '../../schemas/tracker.js'
import type { EditorDocumentT } from '../../schemas/tracker-work-items.js'
import { trackerErrors } from './errors.js'

/**
 * Rich text as the tracker keeps it: markdown or editor JSON as given, and
 * derived from either the plain text that search and filters read and the
 * people it mentions (`<@userId>` in markdown, `mention` nodes in JSON).
 */

export interface RichText {
  format: 'markdown' | 'json'
  markdown: string | null
  json: EditorDocumentT | null
  text: string
  mentions: string[]
}

const MENTION = /<@([0-9A-Za-z_-]{1,64})>/g
const BLOCK_NODES = new Set(['paragraph', 'heading', 'blockquote', 'codeBlock', 'code_block', 'listItem', 'list_item', 'taskItem', 'tableRow', 'table_row', 'horizontalRule', 'hardBreak', 'hard_break'])

/** Markdown's plain text: syntax marks out, link and image texts kept, code kept, mentions as `@id`. */
export function markdownText (markdown: string): string {
  // Every pattern here is linear in the line it reads: the input is a client's, up to 200,000 characters.
  return markdown
    .replace(/\r\n?/g, '\n')
    .replace(/^```[^\n]*$/gm, '')
    .replace(/<@([0-9A-Za-z_-]{1,64})>/g, '@$1')
    .replace(/!?\[([^\]\n]{0,500})\]\([^)\n]{0,2048}\)/g, '$1')
    .replace(/<\/?[A-Za-z][^>\n]{0,200}>/g, '')
    .replace(/^[ \t]{0,3}(?:#{1,6}|>|[-*+]|\d{1,9}[.)])[ \t]+(?:\[[ xX]\][ \t]+)?/gm, '')
    .replace(/^[ \t]{0,3}(?:[-*_][ \t]*){3,}$/gm, '')
    .replace(/\*\*|__|~~|`/g, '')
    .replace(/(^|[^\p{L}\p{N}])[*_](?=[\p{L}\p{N}])|(?<=[\p{L}\p{N}])[*_](?![\p{L}\p{N}])/gu, '$1')
    .replace(/\n{3,}/g, '\n\n')
    .trim()
}

export function markdownMentions (markdown: string): string[] {
  return [...new Set([...markdown.matchAll(MENTION)].map((match) => match[1]))]
}

/** Walks editor JSON without recursion (it comes from clients): its text and the ids its mention nodes carry. */
function walkJson (doc: EditorDocumentT): { text: string, mentions: string[] } {
  const pieces: string[] = []
  const mentions = new Set<string>()
  const stack: unknown[] = [doc]
  while (stack.length > 0) {
    const node = stack.pop()
    if (node === '\n') { pieces.push('\n'); continue }
    if (!isPlainObject(node)) continue
    const attrs = isPlainObject(node.attrs) ? node.attrs : {}
    if (node.type === 'mention' && typeof attrs.id === 'string') {
      mentions.add(attrs.id)
      pieces.push(`@${typeof attrs.label === 'string' ? attrs.label : attrs.id}`)
    }
    if (typeof node.text === 'string') pieces.push(node.text)
    if (typeof node.type === 'string' && BLOCK_NODES.has(node.type)) stack.push('\n')
    if (Array.isArray(node.content)) for (let i = node.content.length - 1; i >= 0; i--) stack.push(node.content[i])
  }
  return { text: pieces.join('').replace(/\n{3,}/g, '\n\n').trim(), mentions: [...mentions] }
}

/**
 * A description (or comment) as given: markdown or editor JSON, not both;
 * `null`/absent for both means empty markdown. JSON is bounded in depth and
 * size like any client value stored as given.
 */
export function richText (markdown: string | null | undefined, json: EditorDocumentT | null | undefined, path: string): RichText {
  if (markdown !== undefined && markdown !== null && json !== undefined && json !== null) {
    throw trackerErrors.invalidValue({ path, problem: 'give markdown or editor JSON, not both' })
  }
  if (json !== undefined && json !== null) {
    if (!isPlainObject(json) || json.type !== 'doc') throw trackerErrors.invalidValue({ path: `${path}Json`, problem: 'must be an editor document ({ type: "doc", content: [...] })' })
    if (nestedDeeperThan(json, 40)) throw trackerErrors.invalidValue({ path: `${path}Json`, problem: 'is nested deeper than 40 levels' })
    if (JSON.stringify(json).length > TRACKER_LIMITS.bodyLength) throw trackerErrors.invalidValue({ path: `${path}Json`, problem: `is longer than ${TRACKER_LIMITS.bodyLength} characters as JSON` })
    const { text, mentions } = walkJson(json)
    return { format: 'json', markdown: null, json, text, mentions }
  }
  const source = markdown ?? ''
  if (source.length > TRACKER_LIMITS.bodyLength) throw trackerErrors.invalidValue({ path, problem: `is longer than ${TRACKER_LIMITS.bodyLength} characters` })
  return { format: 'markdown', markdown: source, json: null, text: markdownText(source), mentions: markdownMentions(source) }
}
