import { createHash } from 'node:crypto'
import { dnsErrors } from './errors.js'
import { canonicalContent, type RecordType } from './content.js'
import { ownerName } from './names.js'
import { DNS_MAX_CHANGES, DNS_MAX_TTL, DNS_MIN_TTL } from '../../schemas/dns.js'

export const DEFAULT_TTL = 3600
export const MAX_RECORDS_PER_ZONE = 5000

export interface RecordData { name: string, type: RecordType, ttl: number, content: string }
export interface RecordInput { name: string, type: RecordType, ttl?: number, content: string }
export interface ChangeSet { create?: RecordInput[], update?: Array<RecordInput & { id: string }>, delete?: string[] }

/** One name and type's records as a provider stores them; no contents means the set goes. */
export interface RRsetChange { name: string, type: RecordType, ttl: number, contents: string[] }

/**
 * A record's id is its zone's id and a digest of its name, type and content:
 * the same on every provider (PowerDNS and Route 53 have no per-record ids),
 * and a record whose content changes gets a new one. Zone ids never hold `-`,
 * so the first `-` splits the two.
 */
export function recordId (zoneId: string, record: Pick<RecordData, 'name' | 'type' | 'content'>): string {
  const digest = createHash('sha256').update(`${record.name}\n${record.type}\n${record.content}`).digest('base64url').slice(0, 16)
  return `${zoneId}-${digest}`
}

export function zoneIdOf (id: string): string | null {
  const cut = id.indexOf('-')
  return cut <= 0 ? null : id.slice(0, cut)
}

const rrsetKey = (record: Pick<RecordData, 'name' | 'type'>) => `${record.name} ${record.type}`

export function compareRecords (a: RecordData, b: RecordData): number {
  return a.name === b.name ? (a.type === b.type ? (a.content < b.content ? -1 : a.content > b.content ? 1 : 0) : a.type < b.type ? -1 : 1) : a.name < b.name ? -1 : 1
}

function checkTtl (ttl: number, path: string): number {
  if (!Number.isInteger(ttl) || ttl < DNS_MIN_TTL || ttl > DNS_MAX_TTL) {
    throw dnsErrors.invalidTtl({ min: DNS_MIN_TTL, max: DNS_MAX_TTL, path })
  }
  return ttl
}

/** The canonical record for `input` in `zone`, without its TTL when none was given. */
export function canonicalRecord (input: RecordInput, zone: string, path: string): Omit<RecordData, 'ttl'> & { ttl?: number } {
  if (input.type === 'SOA') throw dnsErrors.soaManaged({ path: `${path}.type` })
  const name = ownerName(input.name, zone, `${path}.name`)
  const content = canonicalContent(input.type, input.content, `${path}.content`)
  return { name, type: input.type, content, ...(input.ttl === undefined ? {} : { ttl: checkTtl(input.ttl, `${path}.ttl`) }) }
}

/**
 * Applies a change set to a zone's records, all or nothing: every refusal is
 * found before anything is written. A record given a TTL sets it for its
 * whole set (RFC 2181 §5.2: one name and type share one TTL); one without
 * takes its set's current TTL.
 */
export function applyChanges (zoneId: string, zone: string, current: RecordData[], changes: ChangeSet, limit = DNS_MAX_CHANGES): { records: RecordData[], rrsets: RRsetChange[], written: RecordData[] } {
  const total = (changes.create?.length ?? 0) + (changes.update?.length ?? 0) + (changes.delete?.length ?? 0)
  if (total === 0) throw dnsErrors.emptyChange()
  if (total > limit) throw dnsErrors.tooManyChanges({ limit })
  const byId = new Map(current.map((record) => [recordId(zoneId, record), record]))
  const take = (id: string, path: string): RecordData => {
    const record = byId.get(id)
    if (record === undefined) throw dnsErrors.recordNotFound({ id, zone, path })
    if (record.type === 'SOA') throw dnsErrors.soaManaged({ path })
    byId.delete(id)
    return record
  }
  changes.delete?.forEach((id, index) => take(id, `body.delete[${index}]`))
  const added: Array<{ record: Omit<RecordData, 'ttl'> & { ttl?: number }, path: string }> = []
  changes.update?.forEach((input, index) => {
    const path = `body.update[${index}]`
    const was = take(input.id, `${path}.id`)
    const record = canonicalRecord(input, zone, path)
    // A record rewritten in place keeps its TTL unless given one.
    if (record.ttl === undefined && record.name === was.name && record.type === was.type) record.ttl = was.ttl
    added.push({ record, path })
  })
  changes.create?.forEach((input, index) => {
    const path = `body.create[${index}]`
    added.push({ record: canonicalRecord(input, zone, path), path })
  })
  const ttls = new Map<string, number>()
  for (const record of byId.values()) ttls.set(rrsetKey(record), record.ttl)
  for (const { record } of added) if (record.ttl !== undefined) ttls.set(rrsetKey(record), record.ttl)
  for (const { record, path } of added) {
    const complete = { ...record, ttl: ttls.get(rrsetKey(record)) ?? DEFAULT_TTL }
    const id = recordId(zoneId, complete)
    if (byId.has(id)) throw dnsErrors.recordExists({ record: `${complete.name} ${complete.type} ${complete.content}`, path })
    byId.set(id, complete)
  }
  const withTtl = (record: RecordData): RecordData => ({ ...record, ttl: ttls.get(rrsetKey(record)) ?? record.ttl })
  const records = [...byId.values()].map(withTtl).sort(compareRecords)
  checkZoneRules(zone, records)
  const written = added.map(({ record }) => withTtl({ ...record, ttl: DEFAULT_TTL }))
  return { records, rrsets: rrsetChanges(current, records), written }
}

/** What holds for a zone's records on every provider, whatever changed them. */
export function checkZoneRules (zone: string, records: RecordData[]): void {
  if (records.length > MAX_RECORDS_PER_ZONE) throw dnsErrors.tooManyRecords({ limit: MAX_RECORDS_PER_ZONE })
  const types = new Map<string, RecordType[]>()
  for (const record of records) types.set(record.name, [...(types.get(record.name) ?? []), record.type])
  for (const [name, held] of types) {
    if (!held.includes('CNAME')) continue
    // RFC 1034 §3.6.2: a CNAME is the only record at its name, so the apex (SOA, NS) can never hold one.
    if (name === zone) throw dnsErrors.cnameConflict({ name, besides: null })
    if (held.length > 1) throw dnsErrors.cnameConflict({ name, besides: held.filter((type) => type !== 'CNAME').join(', ') || 'another CNAME' })
  }
}

function groupRRsets (records: RecordData[]): Map<string, { name: string, type: RecordType, ttl: number, contents: string[] }> {
  const sets = new Map<string, { name: string, type: RecordType, ttl: number, contents: string[] }>()
  for (const record of records) {
    const key = rrsetKey(record)
    const set = sets.get(key) ?? { name: record.name, type: record.type, ttl: record.ttl, contents: [] }
    set.contents.push(record.content)
    sets.set(key, set)
  }
  return sets
}

/** The record sets that differ between two versions of a zone: replaced ones with their new contents, removed ones with none. */
export function rrsetChanges (before: RecordData[], after: RecordData[]): RRsetChange[] {
  const old = groupRRsets(before)
  const next = groupRRsets(after)
  const changes: RRsetChange[] = []
  for (const [key, set] of next) {
    const was = old.get(key)
    if (was === undefined || was.ttl !== set.ttl || was.contents.slice().sort().join('\n') !== set.contents.slice().sort().join('\n')) changes.push(set)
  }
  for (const [key, set] of old) if (!next.has(key)) changes.push({ ...set, contents: [] })
  return changes
}
