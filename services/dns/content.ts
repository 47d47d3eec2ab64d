import { isIPv4, isIPv6 } from 'node:net'
import { dnsErrors } from './errors.js'
import { targetName } from './names.js'
import { parseQuotedStrings, quote } from './text.js'

export const RECORD_TYPES = ['A', 'AAAA', 'CNAME', 'TXT', 'MX', 'NS', 'SOA', 'SRV', 'CAA'] as const
export type RecordType = typeof RECORD_TYPES[number]

export const MAX_TXT_BYTES = 4000
const U16 = 65_535
const U32 = 4_294_967_295

/**
 * Record content in one canonical presentation form per type, so the same
 * record typed two ways is recognised as one, and every provider receives and
 * returns the same text: A `192.0.2.1`; AAAA compressed lower case; names
 * absolute without the trailing dot; MX `10 mail.example.com`; SRV
 * `priority weight port target`; CAA `0 issue "ca.example"`; SOA
 * `mname rname serial refresh retry expire minimum`; TXT the text itself
 * (quoted strings are accepted and joined).
 */
export function canonicalContent (type: RecordType, input: string, path = 'body.content'): string {
  const content = input.trim()
  const bad = (why: string) => dnsErrors.invalidContent({ type, content, why, path })
  const parts = content.split(/\s+/)
  const count = (n: number, shape: string) => { if (parts.length !== n) throw bad(`expected ${shape}`) }
  const number = (text: string, max: number, what: string) => {
    if (!/^\d+$/.test(text) || Number(text) > max) throw bad(`${what} must be a whole number from 0 to ${max}`)
    return Number(text)
  }
  switch (type) {
    case 'A':
      if (!isIPv4(content)) throw bad('expected an IPv4 address such as 192.0.2.1')
      return content
    case 'AAAA':
      if (!isIPv6(content) || content.includes('%')) throw bad('expected an IPv6 address such as 2001:db8::1')
      // The URL parser writes IPv6 in its canonical compressed, lower-case form.
      return new URL(`http://[${content}]/`).hostname.slice(1, -1)
    case 'CNAME':
    case 'NS':
      count(1, 'one domain name')
      return targetName(content, path)
    case 'MX':
      count(2, 'preference and mail server: 10 mail.example.com')
      return `${number(parts[0], U16, 'preference')} ${targetName(parts[1], path, { root: true })}`
    case 'SRV':
      count(4, 'priority weight port target: 10 5 5060 sip.example.com')
      return `${number(parts[0], U16, 'priority')} ${number(parts[1], U16, 'weight')} ${number(parts[2], U16, 'port')} ${targetName(parts[3], path, { root: true })}`
    case 'SOA': {
      count(7, 'mname rname serial refresh retry expire minimum')
      const times = parts.slice(2).map((part, index) => number(part, U32, ['serial', 'refresh', 'retry', 'expire', 'minimum'][index]))
      return [targetName(parts[0], path), targetName(parts[1], path), ...times].join(' ')
    }
    case 'CAA':
      return caaContent(content, bad)
    case 'TXT':
      return txtContent(content, bad)
  }
}

function txtContent (content: string, bad: (why: string) => Error): string {
  const quoted = content.startsWith('"') ? parseQuotedStrings(content) : null
  if (content.startsWith('"') && quoted === null) throw bad('a value that starts with " must be one or more complete quoted strings')
  const text = quoted === null ? content : Buffer.concat(quoted).toString('utf8')
  if (Buffer.byteLength(text, 'utf8') > MAX_TXT_BYTES) throw bad(`at most ${MAX_TXT_BYTES} bytes`)
  return text
}

/** RFC 8659: `flags tag value`; the tag is letters and digits, the value a character-string. */
function caaContent (content: string, bad: (why: string) => Error): string {
  const match = /^(\d+)\s+([A-Za-z0-9]+)\s+(.+)$/.exec(content)
  if (match === null) throw bad('expected flags tag value: 0 issue "letsencrypt.org"')
  const flags = Number(match[1])
  if (flags > 255) throw bad('flags must be from 0 to 255')
  if (match[2].length > 15) throw bad('the tag has at most 15 characters')
  const raw = match[3].trim()
  const quoted = raw.startsWith('"') ? parseQuotedStrings(raw) : null
  if (raw.startsWith('"') && (quoted === null || quoted.length !== 1)) throw bad('the value must be one quoted string')
  if (quoted === null && /\s/.test(raw)) throw bad('a value with blanks must be quoted')
  const value = quoted === null ? Buffer.from(raw, 'utf8') : quoted[0]
  return `${flags} ${match[2].toLowerCase()} ${quote(value)}`
}

/** The CAA content's parts, for the wire. */
export function caaParts (content: string): { flags: number, tag: string, value: Buffer } {
  const match = /^(\d+) (\S+) (.*)$/.exec(content)
  if (match === null) throw new Error(`not canonical CAA content: ${content}`)
  const strings = parseQuotedStrings(match[3])
  return { flags: Number(match[1]), tag: match[2], value: strings?.[0] ?? Buffer.alloc(0) }
}
