import { AppError } from '../platform/errors.js'
import { dnsErrors } from './errors.js'
import { compareRecords, MAX_RECORDS_PER_ZONE, type RecordData } from './changes.js'
import { canonicalContent, RECORD_TYPES, type RecordType } from './content.js'
import { relativeName, zoneName } from './names.js'
import { quote, readEscape, readQuoted, splitStrings } from './text.js'
import { DNS_MAX_TTL, DNS_MAX_ZONE_FILE_BYTES, DNS_MIN_TTL } from '../../schemas/dns.js'

/**
 * RFC 1035 §5 master files: `$ORIGIN`, `$TTL`, `@`, relative names, a blank
 * owner repeating the last one, parentheses spanning lines, `;` comments,
 * quoted strings with escapes, TTLs with BIND's units (1h30m). `$INCLUDE`
 * and `$GENERATE` are refused: an upload names no files of ours.
 */

interface Token { text: string, quoted: boolean, bytes?: Buffer }
interface Line { number: number, ownerBlank: boolean, tokens: Token[] }

const invalid = (line: number, why: string) => dnsErrors.zoneFileInvalid({ line, why })
const FIELD = 'body.zoneFile'

/** Logical lines: comments gone, parenthesised groups joined, quoted strings kept whole. */
function logicalLines (text: string): Line[] {
  const lines: Line[] = []
  let tokens: Token[] = []
  let depth = 0
  let start = 1
  let ownerBlank = false
  let lineNumber = 1
  let at = 0
  let atLineStart = true
  const flush = () => {
    if (tokens.length > 0) lines.push({ number: start, ownerBlank, tokens })
    tokens = []
  }
  while (at < text.length) {
    const char = text[at]
    if (atLineStart && depth === 0) {
      flush()
      start = lineNumber
      ownerBlank = char === ' ' || char === '\t'
    }
    atLineStart = false
    if (char === '\n') { lineNumber++; at++; atLineStart = true; continue }
    if (char === ' ' || char === '\t' || char === '\r') { at++; continue }
    if (char === ';') { while (at < text.length && text[at] !== '\n') at++; continue }
    if (char === '(') { depth++; at++; continue }
    if (char === ')') {
      if (depth === 0) throw invalid(lineNumber, 'a ")" without its "("')
      depth--; at++; continue
    }
    if (char === '"') {
      const read = readQuoted(text, at)
      if (read === null || text.slice(at, read?.end).includes('\n')) throw invalid(lineNumber, 'a quoted string is not closed on its line')
      tokens.push({ text: text.slice(at, read.end), quoted: true, bytes: read.bytes })
      at = read.end
      continue
    }
    let end = at
    let word = ''
    const bytes: number[] = []
    while (end < text.length && !' \t\r\n;()"'.includes(text[end])) {
      if (text[end] === '\\') {
        const escaped = readEscape(text, end)
        if (escaped === null) throw invalid(lineNumber, 'a bad \\ escape')
        word += text.slice(end, escaped.end)
        bytes.push(...escaped.bytes)
        end = escaped.end
        continue
      }
      word += text[end]
      bytes.push(...Buffer.from(text[end], 'utf8'))
      end++
    }
    // `bytes` is the word with its escapes read, as a TXT string wants it; `text` stays as written for the rest.
    tokens.push({ text: word, quoted: false, bytes: Buffer.from(bytes) })
    at = end
  }
  if (depth !== 0) throw invalid(start, 'a "(" is never closed')
  flush()
  return lines
}

const UNITS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400, w: 604_800 }

/** A TTL in seconds: `3600`, or BIND's `1h30m`, `2d`, `1w`. Null when the token is not one. */
function parseTtl (token: string): number | null {
  if (/^\d+$/.test(token)) return Number(token)
  if (!/^(\d+[smhdw])+$/i.test(token)) return null
  let total = 0
  for (const [, count, unit] of token.toLowerCase().matchAll(/(\d+)([smhdw])/g)) total += Number(count) * UNITS[unit]
  return total
}

function absolute (name: string, origin: string, line: number): string {
  if (name === '@') return origin
  if (name.includes('\\')) throw invalid(line, `escapes in names are not supported: ${name}`)
  const lower = name.toLowerCase()
  return lower.endsWith('.') ? lower.slice(0, -1) : `${lower}.${origin}`
}

// Which rdata fields are domain names, read against $ORIGIN when relative.
const NAME_FIELDS: Partial<Record<RecordType, number[]>> = { CNAME: [0], NS: [0], MX: [1], SRV: [3], SOA: [0, 1] }

export interface ParsedZone { origin: string, records: RecordData[] }

/** Parses a zone file; `origin` applies until a `$ORIGIN` says otherwise. Every record is checked as the records API checks it. */
export function parseZoneFile (text: string, options: { origin?: string } = {}): ParsedZone {
  if (Buffer.byteLength(text, 'utf8') > DNS_MAX_ZONE_FILE_BYTES) throw dnsErrors.zoneFileInvalid({ why: `A zone file has at most ${DNS_MAX_ZONE_FILE_BYTES} bytes`, limit: DNS_MAX_ZONE_FILE_BYTES })
  let origin = options.origin === undefined ? null : zoneName(options.origin, 'body.name')
  let firstOrigin = origin
  let defaultTtl: number | null = null
  let lastOwner: string | null = null
  let lastTtl: number | null = null
  const records: RecordData[] = []
  for (const { number, ownerBlank, tokens } of logicalLines(text)) {
    const first = tokens[0]
    if (!first.quoted && first.text.startsWith('$')) {
      const directive = first.text.toUpperCase()
      if (directive === '$ORIGIN' && tokens.length === 2) {
        const given = tokens[1].text
        // A relative $ORIGIN extends the current one (RFC 1035 §5.1).
        origin = wrapped(number, () => zoneName(given.endsWith('.') || origin === null ? given : `${given}.${origin}`, FIELD))
        firstOrigin ??= origin
      } else if (directive === '$TTL' && tokens.length === 2) {
        defaultTtl = parseTtl(tokens[1].text)
        if (defaultTtl === null) throw invalid(number, `"${tokens[1].text}" is not a TTL`)
      } else {
        throw invalid(number, `${first.text} is not supported here (only $ORIGIN and $TTL, each with one value)`)
      }
      continue
    }
    if (origin === null) throw invalid(number, 'no $ORIGIN yet, and no zone name was given')
    const rest = [...tokens]
    let owner: string | null = lastOwner
    if (!ownerBlank) owner = absolute(rest.shift()?.text ?? '', origin, number)
    if (owner === null) throw invalid(number, 'the first record needs an owner name')
    let ttl: number | null = null
    let type: string | null = null
    while (rest.length > 0 && type === null) {
      const word = rest.shift() as Token
      const upper = word.text.toUpperCase()
      const asTtl = word.quoted ? null : parseTtl(word.text)
      if (asTtl !== null && ttl === null) ttl = asTtl
      else if (upper === 'IN') continue
      else if (['CH', 'HS', 'CS'].includes(upper)) throw invalid(number, `only class IN is served, not ${upper}`)
      else if ((RECORD_TYPES as readonly string[]).includes(upper)) type = upper
      else throw invalid(number, `type ${word.text} is not supported (${RECORD_TYPES.join(', ')})`)
    }
    if (type === null || rest.length === 0) throw invalid(number, 'a record needs a type and its data')
    lastOwner = owner
    // Without its own TTL a record takes $TTL, else the last TTL stated (RFC 1035 §5.1, RFC 2308 §4).
    ttl ??= defaultTtl ?? lastTtl
    if (ttl === null) throw invalid(number, 'no TTL, and no $TTL before it')
    lastTtl = ttl
    if (ttl < DNS_MIN_TTL || ttl > DNS_MAX_TTL) throw invalid(number, `TTL ${ttl} is outside ${DNS_MIN_TTL}–${DNS_MAX_TTL} seconds`)
    const recordType = type as RecordType
    const content = recordType === 'TXT'
      ? Buffer.concat(rest.map((token) => token.bytes ?? Buffer.from(token.text, 'utf8'))).toString('utf8')
      : rest.map((token, index) => {
        if (NAME_FIELDS[recordType]?.includes(index) === true && token.text !== '.') return `${absolute(token.text, origin as string, number)}.`
        // The SOA's timers take units too (2h, 2w).
        if (recordType === 'SOA' && index >= 3) return String(parseTtl(token.text) ?? token.text)
        return token.text
      }).join(' ')
    records.push({ name: owner, type: recordType, ttl, content: wrapped(number, () => canonicalContent(recordType, content, FIELD)) })
    if (records.length > MAX_RECORDS_PER_ZONE) throw dnsErrors.tooManyRecords({ limit: MAX_RECORDS_PER_ZONE })
  }
  if (firstOrigin === null) throw dnsErrors.zoneFileInvalid({ why: 'The zone file holds no records' })
  return { origin: firstOrigin, records }
}

/** A check's refusal, restated with the line it came from. */
function wrapped<T> (line: number, check: () => T): T {
  try {
    return check()
  } catch (error) {
    if (error instanceof AppError && error.status === 400) throw invalid(line, error.message)
    throw error
  }
}

/** The zone as a master file: `$ORIGIN`, `$TTL`, the SOA first, then every record by name, names relative to the origin. */
export function renderZoneFile (zone: string, records: RecordData[]): string {
  const sorted = [...records].sort((a, b) => a.type === 'SOA' ? -1 : b.type === 'SOA' ? 1 : compareRecords(a, b))
  const soa = sorted.find((record) => record.type === 'SOA')
  const lines = [`$ORIGIN ${zone}.`, `$TTL ${soa?.ttl ?? 3600}`]
  for (const record of sorted) {
    lines.push([relativeName(record.name, zone), String(record.ttl), 'IN', record.type, presentation(record)].join('\t'))
  }
  return `${lines.join('\n')}\n`
}

function presentation (record: RecordData): string {
  const parts = record.content.split(' ')
  const fqdn = (name: string) => name === '.' ? '.' : `${name}.`
  switch (record.type) {
    case 'TXT': return splitStrings(record.content).map(quote).join(' ')
    case 'CNAME': case 'NS': return fqdn(record.content)
    case 'MX': return `${parts[0]} ${fqdn(parts[1])}`
    case 'SRV': return `${parts.slice(0, 3).join(' ')} ${fqdn(parts[3])}`
    case 'SOA': return `${fqdn(parts[0])} ${fqdn(parts[1])} ${parts.slice(2).join(' ')}`
    default: return record.content
  }
}
