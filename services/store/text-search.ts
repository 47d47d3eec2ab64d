import type { Document, Filter, WithId } from './types.js'

/**
 * The Store's text index (`store.extensions.text(collection)`): weighted
 * fields of a collection's documents, kept in step with every write by the
 * engine itself (SQLite FTS5 fed by triggers inside the writing transaction;
 * a MongoDB text index), searched under an ordinary Store filter that the
 * engine applies inside the same query, so a page is never short for what a
 * filter took away.
 */

export interface TextIndexSpec {
  /** Top-level or dotted string fields and their weights (a higher weight ranks a match there higher). */
  fields: Record<string, number>
}

/**
 * The words to find, as `parseTextQuery` makes them: letters and digits only,
 * so nothing a user types reaches either engine's query syntax. Every word
 * must occur; the last may also be the start of a word (`prefix`).
 */
export interface TextQuery { terms: string[], prefix: boolean }

/** A stretch of a field around what matched; `highlights` are [start, end) offsets of the matched words in `text`. */
export interface Snippet { field: string, text: string, highlights: Array<[number, number]> }

export interface TextHit<T extends Document> {
  doc: WithId<T>
  /** Higher is better; comparable within one query of one collection. */
  score: number
  snippet: Snippet
  /** With `within`: the document the hit lies in. */
  parent?: WithId<Document>
}

export interface TextSearchOptions {
  skip?: number
  limit?: number
  /** Only documents whose `field` names the `_id` of a document of `collection` matching `filter` (a comment's work item). */
  within?: { collection: string, field: string, filter: Filter }
}

export interface TextCountOptions extends Pick<TextSearchOptions, 'within'> {
  cap?: number
}

export interface TextIndex<T extends Document = Document> {
  /** Declares the index (idempotent); documents already stored are indexed when it is new. */
  ensure (spec: TextIndexSpec): Promise<void>
  /** Matches of `query` that also match `filter`, best first, skipped and limited inside the engine's query. */
  search (query: TextQuery, filter: Filter, options?: TextSearchOptions): Promise<Array<TextHit<T>>>
  /**
   * How many documents `search` would find without skip and limit; with
   * `cap`, at most `cap` (the engine stops counting there: a facet over a
   * common word need not visit every match).
   */
  count (query: TextQuery, filter: Filter, options?: TextCountOptions): Promise<number>
  /** Indexes every stored document again (after a restore or a change of spec); the number of documents indexed. */
  rebuild (): Promise<number>
}

export const TEXT_QUERY_MAX_TERMS = 16
export const TEXT_TERM_MAX_LENGTH = 64

const WORD = /[\p{L}\p{N}]+/gu

/**
 * Words of the user's text, lower-cased, at most TEXT_QUERY_MAX_TERMS of at
 * most TEXT_TERM_MAX_LENGTH characters; punctuation, quotes and operators
 * are separators. `prefix` when the text does not end in a separator (the
 * user may be typing the last word).
 */
export function parseTextQuery (text: string): TextQuery {
  const terms = [...new Set((text.normalize('NFKC').match(WORD) ?? []).map((word) => word.toLowerCase().slice(0, TEXT_TERM_MAX_LENGTH)))].slice(0, TEXT_QUERY_MAX_TERMS)
  return { terms, prefix: terms.length > 0 && /[\p{L}\p{N}]$/u.test(text) }
}

const SNIPPET_CONTEXT = 60

function fold (text: string): string {
  return text.normalize('NFKD').replace(/\p{M}/gu, '').toLowerCase()
}

/**
 * A snippet computed from the text itself, for engines that give none
 * (MongoDB): the first matched word with some context, every matched word
 * in it highlighted. Null when no word of the query occurs in `text`.
 */
export function snippetOf (field: string, text: string, query: TextQuery): Snippet | null {
  const words: Array<[number, number]> = []
  for (const match of text.matchAll(WORD)) {
    const word = fold(match[0])
    const last = query.terms[query.terms.length - 1]
    if (query.terms.includes(word) || (query.prefix && word.startsWith(last))) words.push([match.index, match.index + match[0].length])
  }
  if (words.length === 0) return null
  const start = Math.max(0, words[0][0] - SNIPPET_CONTEXT)
  const end = Math.min(text.length, words[0][1] + SNIPPET_CONTEXT * 2)
  const lead = start > 0 ? '…' : ''
  const shown = lead + text.slice(start, end) + (end < text.length ? '…' : '')
  const highlights = words.filter(([from, to]) => from >= start && to <= end).map(([from, to]): [number, number] => [from - start + lead.length, to - start + lead.length])
  return { field, text: shown, highlights }
}

/** The string at a dotted path of a document, or '' when there is none. */
export function textAt (doc: Document, path: string): string {
  let value: unknown = doc
  for (const segment of path.split('.')) value = value !== null && typeof value === 'object' ? (value as Document)[segment] : undefined
  return typeof value === 'string' ? value : ''
}
