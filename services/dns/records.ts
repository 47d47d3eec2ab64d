import type { DnsRecordT } from '../../schemas/dns.js'
import { applyChanges, recordId, type ChangeSet, type RecordData, type RecordInput } from './changes.js'
import type { RecordType } from './content.js'
import { dnsErrors } from './errors.js'
import { StaleZoneError } from './providers/types.js'
import type { HostedZone, Zones } from './zones.js'

export type DnsRecord = DnsRecordT

// Writes that keep losing the race to others are refused rather than retried forever.
const ATTEMPTS = 5

/**
 * Records of a zone, on whichever provider holds it. Every change is read,
 * checked against the zone's rules as a whole, then written as whole record
 * sets in one provider call. The zone is given as found (a route's parent,
 * `Zones.find`, `Zones.zoneHolding`); a record's id names its zone, so a route
 * on one record finds the zone from the id (`Zones.ofRecord`).
 */
export class DnsRecords {
  constructor (private readonly zones: Zones) {}

  async list (zone: HostedZone, filter: { name?: string, type?: RecordType } = {}): Promise<DnsRecord[]> {
    const { ref, provider } = await this.zones.open(zone)
    const { records } = await provider.readZone(ref)
    const name = filter.name?.trim().toLowerCase().replace(/\.$/, '')
    return records
      .filter((record) => (name === undefined || record.name === name) && (filter.type === undefined || record.type === filter.type))
      .map((record) => view(zone.id, record))
  }

  async get (zone: HostedZone, id: string): Promise<DnsRecord> {
    const found = (await this.list(zone)).find((record) => record.id === id)
    if (found === undefined) throw dnsErrors.recordNotFound()
    return found
  }

  /** Applies creates, updates and deletes together: all land, or none does. */
  async change (zone: HostedZone, changes: ChangeSet, limit?: number): Promise<{ written: DnsRecord[], deleted: string[] }> {
    const { ref, provider } = await this.zones.open(zone)
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const { records, version } = await provider.readZone(ref)
      const { rrsets, written } = applyChanges(zone.id, ref.name, records, changes, limit)
      try {
        if (rrsets.length > 0) await provider.replaceRRsets(ref, rrsets, version)
        return { written: written.map((record) => view(zone.id, record)), deleted: changes.delete ?? [] }
      } catch (error) {
        if (!(error instanceof StaleZoneError)) throw error
      }
    }
    throw dnsErrors.concurrentChange()
  }

  async create (zone: HostedZone, input: RecordInput): Promise<DnsRecord> {
    return (await this.change(zone, { create: [input] })).written[0]
  }

  async update (zone: HostedZone, id: string, input: RecordInput): Promise<DnsRecord> {
    return (await this.change(zone, { update: [{ ...input, id }] })).written[0]
  }

  async delete (zone: HostedZone, id: string): Promise<void> {
    await this.change(zone, { delete: [id] })
  }
}

function view (zoneId: string, record: RecordData): DnsRecord {
  return { id: recordId(zoneId, record), zoneId, name: record.name, type: record.type, ttl: record.ttl, content: record.content }
}
