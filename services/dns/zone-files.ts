import { MAX_RECORDS_PER_ZONE } from './changes.js'
import type { DnsRecords } from './records.js'
import { parseZoneFile, renderZoneFile } from './zone-file.js'
import type { HostedZone, Zones } from './zones.js'

/**
 * Zone files in and out. An import creates the zone and all its records in
 * one change, or nothing: a refused record removes the new zone again. The
 * file's SOA and apex NS are left out — the provider keeps its own, and the
 * zone is delegated to its nameservers.
 */
export class ZoneFiles {
  constructor (private readonly zones: Zones, private readonly records: DnsRecords) {}

  async export (zone: HostedZone): Promise<{ name: string, zoneFile: string }> {
    return { name: zone.name, zoneFile: renderZoneFile(zone.name, await this.records.list(zone)) }
  }

  async import (projectId: string, input: { zoneFile: string, name?: string, providerId?: string }): Promise<HostedZone> {
    const parsed = parseZoneFile(input.zoneFile, { origin: input.name })
    const zone = await this.zones.create(projectId, { name: input.name ?? parsed.origin, providerId: input.providerId })
    const create = parsed.records
      .filter((record) => record.type !== 'SOA' && !(record.type === 'NS' && record.name === zone.name))
      .map((record) => ({ name: `${record.name}.`, type: record.type, ttl: record.ttl, content: record.content }))
    if (create.length === 0) return zone
    try {
      await this.records.change(zone, { create }, MAX_RECORDS_PER_ZONE)
    } catch (error) {
      await this.zones.delete(zone)
      throw error
    }
    return zone
  }
}
