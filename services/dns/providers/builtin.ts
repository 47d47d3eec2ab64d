import type { Clock } from '../../platform/clock.js'
import { dnsErrors } from '../errors.js'
import { DuplicateKeyError } from '../../store/errors.js'
import type { SharedReads, Store, StoreCollection, WithId } from '../../store/types.js'
import { compareRecords, DEFAULT_TTL, type RecordData, type RRsetChange } from '../changes.js'
import type { DnsProvider, ZoneContents, ZoneRef, ZoneSetup } from './types.js'
import { StaleZoneError } from './types.js'

export interface SoaTimers { refresh: number, retry: number, expire: number, minimum: number }

/**
 * What the built-in server serves for one zone: its records (the SOA kept
 * apart, its serial bumped by every write). Kept under the zone's name as its
 * `_id`, so the server finds the zone of a query by primary-key reads of the
 * name's suffixes; `zoneId` is the zone it belongs to, which every read and
 * write of the provider checks, so a zone deleted and created again under the
 * same name is never mistaken for the old one.
 */
export type ServedZone = {
  zoneId: string
  name: string
  mname: string
  rname: string
  serial: number
  timers: SoaTimers
  records: RecordData[]
  updatedAt: Date
}

// RFC 1912 §2.2's suggestions, with a short negative TTL so a record just added is not hidden long by a cached NXDOMAIN.
const TIMERS: SoaTimers = { refresh: 7200, retry: 3600, expire: 1_209_600, minimum: 300 }
const SERVED_ZONES = 'dns_served_zones'

/** YYYYMMDDnn, the convention RFC 1912 §2.2 recommends, from the clock. */
function dateSerial (date: Date): number {
  return ((date.getUTCFullYear() * 100 + date.getUTCMonth() + 1) * 100 + date.getUTCDate()) * 100
}

/** The next serial: at least today's first, always above the last (RFC 1982 arithmetic never needs to wrap here). */
export function nextSerial (serial: number, now: Date): number {
  return Math.max(serial + 1, dateSerial(now) + 1)
}

export function soaRecord (zone: ServedZone): RecordData {
  const { refresh, retry, expire, minimum } = zone.timers
  return { name: zone.name, type: 'SOA', ttl: DEFAULT_TTL, content: `${zone.mname} ${zone.rname} ${zone.serial} ${refresh} ${retry} ${expire} ${minimum}` }
}

/**
 * The built-in provider: zones kept in the Store, served by the built-in
 * authoritative server (server.ts), which reads them here on every query.
 */
export class BuiltinProvider implements DnsProvider {
  readonly kind = 'builtin' as const
  readonly apexAlias = false
  private readonly zones: StoreCollection<ServedZone>
  private readonly shared: SharedReads<ServedZone>

  constructor (store: Store, private readonly deps: { clock: Clock, hostmaster?: string }) {
    this.zones = store.collection<ServedZone>(SERVED_ZONES)
    this.shared = store.extensions.shared<ServedZone>(SERVED_ZONES)
  }

  async init (): Promise<void> {
    await this.zones.createIndex({ name: 1 }, { unique: true })
  }

  async check (): Promise<void> {}

  async createZone (zone: ZoneSetup): Promise<string | null> {
    const now = this.deps.clock.now()
    const records: RecordData[] = zone.nameservers.map((ns) => ({ name: zone.name, type: 'NS' as const, ttl: DEFAULT_TTL, content: ns }))
    try {
      await this.zones.insertOne({
        _id: zone.name, zoneId: zone.id, name: zone.name, mname: zone.nameservers[0], rname: `hostmaster.${zone.name}`, serial: dateSerial(now) + 1, timers: TIMERS, records, updatedAt: now
      })
    } catch (error) {
      if (error instanceof DuplicateKeyError) throw dnsErrors.zoneExists({ name: zone.name, holder: 'The built-in server' })
      throw error
    }
    return null
  }

  async deleteZone (zone: ZoneRef): Promise<void> {
    await this.zones.deleteOne({ _id: zone.name, zoneId: zone.id })
  }

  async readZone (zone: ZoneRef): Promise<ZoneContents> {
    const served = await this.zones.findOne({ _id: zone.name, zoneId: zone.id })
    if (served === null) return { records: [], version: null }
    return { records: [soaRecord(served), ...served.records], version: served.serial }
  }

  async replaceRRsets (zone: ZoneRef, changes: RRsetChange[], version: number | null): Promise<void> {
    const served = await this.zones.findOne({ _id: zone.name, zoneId: zone.id })
    if (served === null || (version !== null && served.serial !== version)) throw new StaleZoneError(zone.id)
    const replaced = new Set(changes.map((change) => `${change.name} ${change.type}`))
    const records = served.records.filter((record) => !replaced.has(`${record.name} ${record.type}`))
    for (const change of changes) {
      if (change.type === 'SOA') continue
      for (const content of change.contents) records.push({ name: change.name, type: change.type, ttl: change.ttl, content })
    }
    records.sort(compareRecords)
    const now = this.deps.clock.now()
    // Conditional on the serial read: a write that raced this one made it stale, and the caller re-applies on fresh records.
    const written = await this.zones.updateOne({ _id: zone.name, zoneId: zone.id, serial: served.serial }, { $set: { records, serial: nextSerial(served.serial, now), updatedAt: now } })
    if (written.matchedCount === 0) throw new StaleZoneError(zone.id)
  }

  /**
   * The served zone that holds `name`: the one with the longest name among
   * its suffixes, so the first found walking them longest first. Each is a
   * primary-key read, shared: an unchanged zone is the document cache's frozen
   * instance, read without SQLite (a name that is no zone is one index probe).
   */
  async zoneFor (name: string): Promise<WithId<ServedZone> | null> {
    for (let suffix = name; ; suffix = suffix.slice(suffix.indexOf('.') + 1)) {
      const zone = await this.shared.findOne({ _id: suffix })
      if (zone !== null) return zone
      if (!suffix.includes('.')) return null
    }
  }
}
