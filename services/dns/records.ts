import type { DnsRecordT } from '../../schemas/dns.js'
import { applyChanges, recordId, zoneIdOf, type ChangeSet, type RecordData, type RecordInput } from './changes.js'
import type { RecordType } from './content.js'
import { dnsErrors } from './errors.js'
import { StaleZoneError } from './providers/types.js'
import type { Zones } from './zones.js'

export type DnsRecord = DnsRecordT

// Writes that keep losing the race to others are refused rather than retried forever.
const ATTEMPTS = 5

/**
 * Records of a project's zones, on whichever provider holds the zone. Every
 * change is read, checked against the zone's rules as a whole, then written
 * as whole record sets in one provider call.
 */
export class DnsRecords {
  constructor (private readonly zones: Zones) {}

  async list (projectId: string, zoneId: string, filter: { name?: string, type?: RecordType } = {}): Promise<DnsRecord[]> {
    const { ref, provider } = await this.zones.open(projectId, zoneId)
    const { records } = await provider.readZone(ref)
    const name = filter.name?.trim().toLowerCase().replace(/\.$/, '')
    return records
      .filter((record) => (name === undefined || record.name === name) && (filter.type === undefined || record.type === filter.type))
      .map((record) => view(zoneId, record))
  }

  async get (projectId: string, id: string): Promise<DnsRecord> {
    const found = (await this.inRecordsZone(id, async (zoneId) => await this.list(projectId, zoneId))).find((record) => record.id === id)
    if (found === undefined) throw dnsErrors.recordNotFound()
    return found
  }

  /** Applies creates, updates and deletes together: all land, or none does. */
  async change (projectId: string, zoneId: string, changes: ChangeSet, limit?: number): Promise<{ written: DnsRecord[], deleted: string[] }> {
    const { ref, provider } = await this.zones.open(projectId, zoneId)
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const { records, version } = await provider.readZone(ref)
      const { rrsets, written } = applyChanges(zoneId, ref.name, records, changes, limit)
      try {
        if (rrsets.length > 0) await provider.replaceRRsets(ref, rrsets, version)
        return { written: written.map((record) => view(zoneId, record)), deleted: changes.delete ?? [] }
      } catch (error) {
        if (!(error instanceof StaleZoneError)) throw error
      }
    }
    throw dnsErrors.concurrentChange()
  }

  async create (projectId: string, zoneId: string, input: RecordInput): Promise<DnsRecord> {
    return (await this.change(projectId, zoneId, { create: [input] })).written[0]
  }

  async update (projectId: string, id: string, input: RecordInput): Promise<DnsRecord> {
    return (await this.inRecordsZone(id, async (zoneId) => await this.change(projectId, zoneId, { update: [{ ...input, id }] }))).written[0]
  }

  async delete (projectId: string, id: string): Promise<void> {
    await this.inRecordsZone(id, async (zoneId) => await this.change(projectId, zoneId, { delete: [id] }))
  }

  /** Runs `work` on the zone a record id names; a record whose zone is not the project's is simply not found. */
  private async inRecordsZone<T> (id: string, work: (zoneId: string) => Promise<T>): Promise<T> {
    const zoneId = zoneIdOf(id)
    if (zoneId === null) throw dnsErrors.recordNotFound()
    try {
      return await work(zoneId)
    } catch (error) {
      if (dnsErrors.zoneNotFound.is(error)) throw dnsErrors.recordNotFound()
      throw error
    }
  }
}

function view (zoneId: string, record: RecordData): DnsRecord {
  return { id: recordId(zoneId, record), zoneId, name: record.name, type: record.type, ttl: record.ttl, content: record.content }
}
