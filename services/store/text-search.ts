import type { Document, Snippet, TextIndexSpec, TextQuery } from './types.js'
import { QueryError } from './errors.js'

/**
 * What the engines' text indexes share (the port, `TextIndex`, is in
 * types.ts with the rest of the Store's shape): turning a user's text into
 * the words to find, and snippets for an engine that gives none.
 */

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

/**
 * A hit's snippet, for both engines: from the highest-weighted field whose
 * text holds a word of the query (an empty one of the highest-weighted field
 * when none does).
 */
export function bestSnippet (doc: Document, fields: Record<string, number>, query: TextQuery): Snippet {
  const byWeight = Object.entries(fields).sort((a, b) => b[1] - a[1]).map(([field]) => field)
  for (const field of byWeight) {
    const found = snippetOf(field, textAt(doc, field), query)
    if (found !== null) return found
  }
  return { field: byWeight[0] ?? '', text: '', highlights: [] }
}

/** The string at a dotted path of a document, or '' when there is none. */
export function textAt (doc: Document, path: string): string {
  let value: unknown = doc
  for (const segment of path.split('.')) value = value !== null && typeof value === 'object' ? (value as Document)[segment] : undefined
  return typeof value === 'string' ? value : ''
}

/**
 * How many matches are ranked at a time: the newest TEXT_RANK_WINDOW of a
 * query's matches (in the scope) first, then the next older window, and so
 * on. bm25 and MongoDB's text score are computed for every row they rank, so
 * a word in a fifth of 100,000 items would otherwise be scored 20,000 times
 * for one page; past a few hundred matches a word says little about
 * relevance, and newer work is likelier the one sought. 500, not the 2,000 it
 * was: scoring a row is most of a common word's cost (bench/README.md, issue 31).
 */
export const TEXT_RANK_WINDOW = 500

/** The scope values a search gives, checked against the spec: required with a scoped spec, refused without one. */
export function scopeValues (spec: TextIndexSpec, scope: unknown): string[] | null {
  if (spec.scope === undefined) {
    if (scope !== undefined) throw new QueryError('options.scope', 'This text index declares no scope')
    return null
  }
  if (!Array.isArray(scope) || scope.some((value) => typeof value !== 'string')) throw new QueryError('options.scope', 'Must be an array of strings: this text index is scoped')
  return [...new Set(scope as string[])]
}
