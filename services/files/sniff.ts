/**
 * The type of a file from its first bytes, never from its name or the
 * client's word: downloads are served with this type. HTML is deliberately
 * never recognised (it comes out as text/plain) so a stored file can never be
 * served as a page running under the API's origin. SVG is recognised, and can
 * hold scripts too: whoever serves it inline must add a CSP or a download
 * disposition.
 */
export const SNIFF_BYTES = 4096
export const OCTET_STREAM = 'application/octet-stream'

const ascii = (head: Buffer, offset: number, text: string): boolean =>
  head.length >= offset + text.length && head.toString('latin1', offset, offset + text.length) === text

const bytes = (head: Buffer, offset: number, values: number[]): boolean =>
  head.length >= offset + values.length && values.every((value, i) => head[offset + i] === value)

/** An MPEG audio frame header: sync bits, then no reserved version, layer, bitrate or sample rate. */
function mpegFrame (head: Buffer): boolean {
  if (head.length < 3 || head[0] !== 0xff || (head[1] & 0xe0) !== 0xe0) return false
  const version = (head[1] >> 3) & 3
  const layer = (head[1] >> 1) & 3
  const bitrate = head[2] >> 4
  const sampleRate = (head[2] >> 2) & 3
  return version !== 1 && layer !== 0 && bitrate !== 15 && sampleRate !== 3
}

const ISO_BRANDS: Record<string, string> = {
  'M4A ': 'audio/mp4',
  'M4B ': 'audio/mp4',
  'qt  ': 'video/quicktime',
  avif: 'image/avif',
  avis: 'image/avif',
  heic: 'image/heic',
  heix: 'image/heic',
  mif1: 'image/heic'
}

const MAGIC: Array<{ type: string | ((head: Buffer) => string), test: (head: Buffer) => boolean }> = [
  { type: 'image/png', test: (h) => bytes(h, 0, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]) },
  { type: 'image/jpeg', test: (h) => bytes(h, 0, [0xff, 0xd8, 0xff]) },
  { type: 'image/gif', test: (h) => ascii(h, 0, 'GIF87a') || ascii(h, 0, 'GIF89a') },
  { type: 'image/webp', test: (h) => ascii(h, 0, 'RIFF') && ascii(h, 8, 'WEBP') },
  { type: 'audio/wav', test: (h) => ascii(h, 0, 'RIFF') && ascii(h, 8, 'WAVE') },
  { type: 'application/pdf', test: (h) => ascii(h, 0, '%PDF-') },
  { type: 'application/zip', test: (h) => bytes(h, 0, [0x50, 0x4b]) && (bytes(h, 2, [3, 4]) || bytes(h, 2, [5, 6]) || bytes(h, 2, [7, 8])) },
  { type: 'application/gzip', test: (h) => bytes(h, 0, [0x1f, 0x8b, 0x08]) },
  { type: (h) => ISO_BRANDS[h.toString('latin1', 8, 12)] ?? 'video/mp4', test: (h) => h.length >= 12 && ascii(h, 4, 'ftyp') },
  {
    type: (h) => h.subarray(0, 64).includes('webm', 0, 'latin1') ? 'video/webm' : 'video/x-matroska',
    test: (h) => bytes(h, 0, [0x1a, 0x45, 0xdf, 0xa3])
  },
  { type: 'audio/ogg', test: (h) => ascii(h, 0, 'OggS') },
  { type: 'audio/mpeg', test: (h) => ascii(h, 0, 'ID3') || mpegFrame(h) }
]

const utf8 = new TextDecoder('utf-8', { fatal: true })

/** The text of `head` if it is UTF-8 without binary control characters; a sequence cut at the end of a sample is forgiven. */
function asText (head: Buffer, complete: boolean): string | null {
  let text: string | null = null
  for (let cut = 0; cut <= (complete ? 0 : 3) && cut < head.length; cut++) {
    try {
      text = utf8.decode(head.subarray(0, head.length - cut))
      break
    } catch {}
  }
  if (text === null) return null
  // Tab, line feed, form feed, carriage return and escape occur in text files; other C0 controls do not.
  return /[\x00-\x08\x0b\x0e-\x1a\x1c-\x1f\x7f]/.test(text) ? null : text
}

function looksLikeJson (text: string, complete: boolean): boolean {
  if (complete) {
    try {
      JSON.parse(text)
      return true
    } catch {
      return false
    }
  }
  return /^\{\s*["}]/.test(text) || /^\[\s*[[{"\-0-9tfn\]]/.test(text)
}

export function sniffType (head: Buffer, options: { complete?: boolean } = {}): string {
  const complete = options.complete ?? head.length < SNIFF_BYTES
  for (const entry of MAGIC) {
    if (entry.test(head)) return typeof entry.type === 'string' ? entry.type : entry.type(head)
  }
  if (head.length === 0) return OCTET_STREAM
  const text = asText(head, complete)
  if (text === null) return OCTET_STREAM
  const body = text.replace(/^\uFEFF/, '').trimStart()
  if (body.startsWith('<')) {
    const svg = /<svg[\s>]/i.test(body) && /^(<\?xml|<svg|<!doctype svg|<!--)/i.test(body)
    if (svg) return 'image/svg+xml'
    if (body.startsWith('<?xml')) return 'application/xml'
  }
  if ((body.startsWith('{') || body.startsWith('[')) && looksLikeJson(body, complete)) return 'application/json'
  return 'text/plain'
}

/** Whether a sniffed type is in a field's allowed list; `type/*` and `*\/*` are wildcards, and an empty list allows anything. */
export function typeAllowed (sniffedType: string, allowedTypes: readonly string[]): boolean {
  if (allowedTypes.length === 0) return true
  const type = sniffedType.split(';')[0].trim().toLowerCase()
  const major = type.split('/')[0]
  return allowedTypes.some((allowed) => {
    const wanted = allowed.split(';')[0].trim().toLowerCase()
    return wanted === type || wanted === '*/*' || (wanted.endsWith('/*') && wanted.slice(0, -2) === major)
  })
}
