import * as packet from 'dns-packet'
import type { Answer, Packet, Question } from 'dns-packet'
import { FrozenMemo } from '../cache/frozen-memo.js'
import type { RecordData } from './changes.js'
import { caaParts } from './content.js'
import { isInZone } from './names.js'
import { soaRecord, type ServedZone } from './providers/builtin.js'
import { splitStrings } from './text.js'
import { encodeRecord } from './wire.js'

export const RCODE = { NOERROR: 0, FORMERR: 1, SERVFAIL: 2, NXDOMAIN: 3, NOTIMP: 4, REFUSED: 5 } as const
const AA = 1 << 10
// CNAME chains longer than this are treated as loops (RFC 1034 §3.6.2 asks servers to stop somewhere).
const MAX_CHAIN = 8

/**
 * What the server sends back for one question, before encoding: sections and
 * the header bits that matter, and the bytes of those records that come
 * encoded already (a zone's own, from its ZoneView).
 */
export interface Reply {
  rcode: number
  authoritative: boolean
  answers: Answer[]
  authorities: Answer[]
  additionals: Answer[]
  encoded?: (record: Answer) => Buffer | undefined
}

/**
 * One zone's records by owner name, with the names that exist only as
 * ancestors of others (empty non-terminals). Built once per state of a zone:
 * the server reads zones shared, so an unchanged zone is the same frozen
 * instance on every query and its view is remembered with it (FrozenMemo).
 */
class ZoneView {
  readonly byName: ReadonlyMap<string, RecordData[]>
  readonly interior: ReadonlySet<string>
  /** Each record's wire form under its own name, and the SOA of negative answers (RFC 2308 §3: its TTL the lesser of its own and its minimum field). */
  private readonly wire: ReadonlyMap<RecordData, Answer>
  readonly negativeSoa: Answer
  /** The bytes of each of those wire records in a message, so a reply copies them rather than encoding them again. */
  private readonly bytes: ReadonlyMap<Answer, Buffer>
  readonly encoded = (record: Answer): Buffer | undefined => this.bytes.get(record)

  constructor (readonly zone: ServedZone) {
    const byName = new Map<string, RecordData[]>()
    const interior = new Set<string>()
    const wire = new Map<RecordData, Answer>()
    const soa = soaRecord(zone)
    this.negativeSoa = wireRecord({ ...soa, ttl: Math.min(soa.ttl, zone.timers.minimum) })
    for (const record of [soa, ...zone.records]) {
      wire.set(record, wireRecord(record))
      const list = byName.get(record.name)
      if (list === undefined) byName.set(record.name, [record])
      else list.push(record)
      let name = record.name
      while (name !== zone.name && name.includes('.')) {
        name = name.slice(name.indexOf('.') + 1)
        interior.add(name)
      }
    }
    this.byName = byName
    this.interior = interior
    this.wire = wire
    this.bytes = new Map([this.negativeSoa, ...wire.values()].map((record) => [record, encodeRecord(record)]))
  }

  /** `record` on the wire, owned by `owner` (the name as asked, case kept, or a wildcard's expansion). */
  answer (record: RecordData, owner: string = record.name): Answer {
    return owner === record.name ? this.wire.get(record) ?? wireRecord(record) : wireRecord(record, owner)
  }

  exists (name: string): boolean {
    return this.byName.has(name) || this.interior.has(name)
  }

  /** The records of `name`, or of the wildcard that covers it (RFC 4592: `*.` + the closest encloser, when `name` itself does not exist). */
  lookup (name: string): RecordData[] | null {
    const own = this.byName.get(name)
    if (own !== undefined) return own
    if (this.interior.has(name)) return []
    let encloser = name
    while (encloser !== this.zone.name) {
      encloser = encloser.slice(encloser.indexOf('.') + 1)
      if (this.exists(encloser)) break
    }
    return this.byName.get(`*.${encloser}`) ?? null
  }

  /** The delegation point between the apex and `name` (NS records below the apex), if any. */
  cut (name: string): string | null {
    const labels = name.slice(0, name.length - this.zone.name.length - 1).split('.')
    for (let index = labels.length - 1; index >= 0 && name !== this.zone.name; index--) {
      const candidate = `${labels.slice(index).join('.')}.${this.zone.name}`
      if (this.byName.get(candidate)?.some((record) => record.type === 'NS') === true) return candidate
    }
    return null
  }
}

const zoneViews = new FrozenMemo((zone: ServedZone) => new ZoneView(zone))

export function wireRecord (record: RecordData, owner: string = record.name): Answer {
  const base = { name: owner, class: 'IN' as const, ttl: record.ttl }
  const parts = record.content.split(' ')
  switch (record.type) {
    case 'A': case 'AAAA': case 'CNAME': case 'NS':
      return { ...base, type: record.type, data: record.content }
    case 'TXT':
      return { ...base, type: 'TXT', data: splitStrings(record.content) }
    case 'MX':
      return { ...base, type: 'MX', data: { preference: Number(parts[0]), exchange: parts[1] === '.' ? '' : parts[1] } }
    case 'SRV':
      return { ...base, type: 'SRV', data: { priority: Number(parts[0]), weight: Number(parts[1]), port: Number(parts[2]), target: parts[3] === '.' ? '' : parts[3] } }
    case 'CAA': {
      const { flags, tag, value } = caaParts(record.content)
      return { ...base, type: 'CAA', data: { flags, tag: tag as 'issue', value: value.toString('utf8') } }
    }
    case 'SOA': {
      const [mname, rname, serial, refresh, retry, expire, minimum] = parts
      return { ...base, type: 'SOA', data: { mname, rname, serial: Number(serial), refresh: Number(refresh), retry: Number(retry), expire: Number(expire), minimum: Number(minimum) } }
    }
  }
}

/**
 * Answers one question from one zone, as RFC 1034 §4.3.2 lays out: a
 * referral below a delegation, the records asked for, a CNAME followed while
 * its target stays in the zone, a wildcard when the name does not exist,
 * NODATA (NOERROR, no answer) when the name exists without that type, and
 * NXDOMAIN otherwise — both negative answers carrying the SOA.
 */
export function answerQuestion (zone: ServedZone, question: Question, options: { minimalAny?: boolean } = {}): Reply {
  const view = zoneViews.get(zone)
  const reply: Reply = { rcode: RCODE.NOERROR, authoritative: true, answers: [], authorities: [], additionals: [], encoded: view.encoded }
  const qtype = question.type as string
  let name = question.name.toLowerCase().replace(/\.$/, '')
  let owner = question.name.replace(/\.$/, '')
  for (let step = 0; step < MAX_CHAIN; step++) {
    const cut = view.cut(name)
    if (cut !== null && !(cut === name && qtype === 'DS')) {
      if (step === 0) reply.authoritative = false
      reply.authorities.push(...(view.byName.get(cut) ?? []).filter((record) => record.type === 'NS').map((record) => view.answer(record)))
      addGlue(view, reply, reply.authorities)
      return reply
    }
    const records = view.lookup(name)
    if (records === null) {
      reply.rcode = RCODE.NXDOMAIN
      reply.authorities.push(view.negativeSoa)
      return reply
    }
    const cname = records.find((record) => record.type === 'CNAME')
    if (cname !== undefined && qtype !== 'CNAME') {
      reply.answers.push(view.answer(cname, owner))
      if (!isInZone(cname.content, zone.name)) return reply
      name = cname.content
      owner = cname.content
      continue
    }
    // RFC 8482: ANY over UDP gets one record set, not a reflection-sized answer.
    const matching = qtype !== 'ANY' ? records.filter((record) => record.type === qtype) : options.minimalAny === true ? records.filter((record) => record.type === records[0]?.type) : records
    if (matching.length === 0) {
      reply.authorities.push(view.negativeSoa)
      return reply
    }
    const answers = matching.map((record) => view.answer(record, owner))
    reply.answers.push(...answers)
    addGlue(view, reply, answers)
    return reply
  }
  return reply
}

/** Addresses of in-zone targets of NS, MX and SRV records, so a resolver needs no second query. */
function addGlue (view: ZoneView, reply: Reply, section: Answer[]): void {
  for (const record of section) {
    const target = record.type === 'NS' ? record.data : record.type === 'MX' ? record.data.exchange : record.type === 'SRV' ? record.data.target : null
    if (typeof target !== 'string' || !isInZone(target, view.zone.name)) continue
    for (const address of view.byName.get(target) ?? []) {
      if (address.type === 'A' || address.type === 'AAAA') reply.additionals.push(view.answer(address))
    }
  }
}

// dns-packet has the per-record codec its typings leave out.
const answerLength = (packet as unknown as { answer: { encodingLength: (record: Answer) => number } }).answer.encodingLength

/**
 * The answer sections of a zone transfer (RFC 5936): the SOA, every record,
 * the SOA again, cut so each message stays well inside TCP's 64 KB frame.
 */
export function transferMessages (zone: ServedZone, maxBytes = 60_000): Answer[][] {
  const soa = wireRecord(soaRecord(zone))
  const messages: Answer[][] = []
  let current: Answer[] = []
  let bytes = 0
  for (const record of [soa, ...zone.records.map((entry) => wireRecord(entry)), soa]) {
    const size = answerLength(record)
    if (current.length > 0 && bytes + size > maxBytes) {
      messages.push(current)
      current = []
      bytes = 0
    }
    current.push(record)
    bytes += size
  }
  messages.push(current)
  return messages
}

export function replyFlags (query: Packet, reply: { rcode: number, authoritative: boolean }): number {
  const opcode = ((query.flags ?? 0) >> 11) & 0xf
  const rd = (query.flags ?? 0) & (1 << 8)
  return (opcode << 11) | (reply.authoritative ? AA : 0) | rd | reply.rcode
}
