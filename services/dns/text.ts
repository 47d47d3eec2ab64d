/**
 * Character-strings as zone files and record content write them (RFC 1035
 * §5.1): `"…"` with `\"`, `\\` and `\DDD` (a byte in decimal) escapes. Kept
 * as bytes because DNS counts bytes: a TXT string holds at most 255 of them.
 */

export const MAX_STRING_BYTES = 255

/** The strings of `input` when it is nothing but quoted strings separated by blanks, else null. */
export function parseQuotedStrings (input: string): Buffer[] | null {
  const strings: Buffer[] = []
  let at = 0
  const skipBlanks = () => { while (at < input.length && (input[at] === ' ' || input[at] === '\t')) at++ }
  skipBlanks()
  if (input[at] !== '"') return null
  while (at < input.length) {
    if (input[at] !== '"') return null
    const read = readQuoted(input, at)
    if (read === null) return null
    strings.push(read.bytes)
    at = read.end
    skipBlanks()
  }
  return strings
}

/** Reads the quoted string opening at `start`; null when it never closes or holds a bad escape. */
export function readQuoted (input: string, start: number): { bytes: Buffer, end: number } | null {
  const bytes: number[] = []
  let at = start + 1
  while (at < input.length) {
    const char = input[at]
    if (char === '"') return { bytes: Buffer.from(bytes), end: at + 1 }
    if (char === '\\') {
      const escaped = readEscape(input, at)
      if (escaped === null) return null
      bytes.push(...escaped.bytes)
      at = escaped.end
      continue
    }
    const code = input.codePointAt(at) ?? 0
    const encoded = Buffer.from(String.fromCodePoint(code), 'utf8')
    bytes.push(...encoded)
    at += code > 0xffff ? 2 : 1
  }
  return null
}

/** `\DDD` is one byte (0–255), `\X` is X itself. */
export function readEscape (input: string, at: number): { bytes: number[], end: number } | null {
  const digits = input.slice(at + 1, at + 4)
  if (/^\d{3}$/.test(digits)) {
    const value = Number(digits)
    return value > 255 ? null : { bytes: [value], end: at + 4 }
  }
  if (/^\d/.test(digits) || at + 1 >= input.length) return null
  const code = input.codePointAt(at + 1) ?? 0
  return { bytes: [...Buffer.from(String.fromCodePoint(code), 'utf8')], end: at + 1 + (code > 0xffff ? 2 : 1) }
}

/** A quoted string that any zone-file reader takes back: printable ASCII as is, `"` and `\` escaped, every other byte as `\DDD`. */
export function quote (bytes: Buffer): string {
  let out = '"'
  for (const byte of bytes) {
    if (byte === 0x22 || byte === 0x5c) out += `\\${String.fromCharCode(byte)}`
    else if (byte >= 0x20 && byte < 0x7f) out += String.fromCharCode(byte)
    else out += `\\${String(byte).padStart(3, '0')}`
  }
  return `${out}"`
}

/** A TXT value cut into the 255-byte strings the wire format needs (RFC 7208 §3.3: readers join them without a separator). */
export function splitStrings (text: string): Buffer[] {
  const bytes = Buffer.from(text, 'utf8')
  if (bytes.length === 0) return [bytes]
  const parts: Buffer[] = []
  for (let at = 0; at < bytes.length; at += MAX_STRING_BYTES) parts.push(bytes.subarray(at, at + MAX_STRING_BYTES))
  return parts
}
