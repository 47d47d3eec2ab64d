/**
 * HTTP-agnostic pieces of a download (RFC 9110 §14 and §13): what a Range
 * header asks of a representation of `size` bytes, the ETag of a stored file
 * and whether an If-None-Match header already holds it.
 */

export type RangeAnswer =
  /** Send everything: no Range, one we ignore (another unit, a bad form, several ranges), or one covering nothing we can tell. */
  | { status: 200 }
  /** Send bytes start..end (inclusive), `length` of them, with Content-Range. */
  | { status: 206, start: number, end: number, length: number, contentRange: string }
  /** Nothing of the representation is selected: answer 416 with this Content-Range. */
  | { status: 416, contentRange: string }

const SINGLE = /^bytes[ \t]*=[ \t]*(\d*)[ \t]*-[ \t]*(\d*)[ \t]*$/i

export function parseRange (header: string | undefined | null, size: number): RangeAnswer {
  if (!Number.isSafeInteger(size) || size < 0) throw new RangeError('size must be a whole number of bytes')
  if (header === undefined || header === null) return { status: 200 }
  // Serving several ranges would need multipart/byteranges; the RFC lets a server send the whole body instead.
  if (header.includes(',')) return { status: 200 }
  const match = SINGLE.exec(header.trim())
  if (match === null) return { status: 200 }
  const [, first, last] = match
  const unsatisfiable = { status: 416 as const, contentRange: `bytes */${size}` }
  let start: number
  let end: number
  if (first === '') {
    if (last === '') return { status: 200 }
    // A suffix: the final N bytes.
    const suffix = Number(last)
    if (suffix === 0 || size === 0) return unsatisfiable
    start = Math.max(0, size - suffix)
    end = size - 1
  } else {
    start = Number(first)
    end = last === '' ? size - 1 : Math.min(Number(last), size - 1)
    // last < first is not a valid range at all, so it is ignored rather than refused.
    if (last !== '' && Number(last) < start) return { status: 200 }
    if (start >= size) return unsatisfiable
  }
  return { status: 206, start, end, length: end - start + 1, contentRange: `bytes ${start}-${end}/${size}` }
}

const SHA256_HEX = /^[0-9a-f]{64}$/i

/** A strong ETag: the content's SHA-256 identifies its bytes exactly. */
export function etagFor (sha256: string): string {
  if (!SHA256_HEX.test(sha256)) throw new RangeError('an ETag is made from a SHA-256 hex digest')
  return `"${sha256.toLowerCase()}"`
}

const ENTITY_TAG = /^[ \t]*(W\/)?("[\x21\x23-\x7e\x80-\xff]*")[ \t]*(?:,|$)/

/**
 * Whether If-None-Match already names `etag` (then answer 304 to GET/HEAD).
 * If-None-Match uses the weak comparison, so W/ prefixes are ignored; `*`
 * matches any current representation. A malformed list matches nothing.
 */
export function ifNoneMatch (header: string | undefined | null, etag: string): boolean {
  if (header === undefined || header === null) return false
  if (header.trim() === '*') return true
  const wanted = etag.replace(/^W\//, '')
  let rest = header
  while (rest.trim() !== '') {
    const match = ENTITY_TAG.exec(rest)
    if (match === null) return false
    if (match[2] === wanted) return true
    rest = rest.slice(match[0].length)
  }
  return false
}
