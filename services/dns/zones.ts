import type { Clock } from '../platform/clock.js'
import type { IdGenerator } from '../platform/ids.js'
import { isoString } from '../platform/iso-dates.js'
import { DuplicateKeyError } from '../store/errors.js'
import type { Store, StoreCollection, WithId } from '../store/types.js'
import type { ZoneT } from '../../schemas/dns.js'
import { dnsErrors } from './errors.js'
import { zoneName } from './names.js'
import { zoneIdOf } from './changes.js'
import type { DnsProvider, ProviderKind, ZoneRef } from './providers/types.js'

export type Zone = ZoneT

/** A zone with what reaching it at its provider takes: what routes load once as their parent, and what record operations act on. */
export type HostedZone = Zone & { projectId: string, externalId: string | null }

/** A zone as this service keeps it; its records live with its provider (for the built-in one, in its own collection). */
type ZoneRecord = {
  projectId: string
  providerId: string
  providerKind: ProviderKind
  name: string
  /** One zone name per provider account (and one per built-in server), whichever project asks. */
  hostKey: string
  externalId: string | null
  nameservers: string[]
  createdAt: Date
  updatedAt: Date
}

/** How the zones service reaches a project's providers (services/dns/providers.ts). */
export interface ProviderSource {
  open (projectId: string, providerId: string): Promise<{ provider: DnsProvider, accountKey: string }>
}

export const BUILTIN_PROVIDER_ID = 'builtin'
export const MAX_ZONES_PER_PROJECT = 100
const ZONES = 'dns_zones'

function hosted (record: WithId<ZoneRecord>): HostedZone {
  return {
    id: record._id,
    projectId: record.projectId,
    name: record.name,
    providerId: record.providerId,
    providerKind: record.providerKind,
    externalId: record.externalId,
    nameservers: record.nameservers,
    createdAt: isoString(record.createdAt),
    updatedAt: isoString(record.updatedAt)
  }
}

export function zoneRef (zone: { id: string, name: string, externalId: string | null }): ZoneRef {
  return { id: zone.id, name: zone.name, externalId: zone.externalId }
}

export class Zones {
  private readonly zones: StoreCollection<ZoneRecord>

  constructor (store: Store, private readonly deps: { clock: Clock, newId: IdGenerator, providers: ProviderSource, nameservers: string[], reservedHosts?: string[] }) {
    this.zones = store.collection<ZoneRecord>(ZONES)
  }

  async init (): Promise<void> {
    await this.zones.createIndex({ hostKey: 1 }, { unique: true })
    await this.zones.createIndex({ projectId: 1, name: 1 })
  }

  async list (projectId: string): Promise<Zone[]> {
    return (await this.zones.find({ projectId }, { sort: { name: 1, _id: 1 } }).toArray()).map((record) => this.view(hosted(record)))
  }

  /** The project's zone; 404 for another project's. */
  async find (projectId: string, zoneId: string): Promise<HostedZone> {
    const zone = await this.zones.findOne({ _id: zoneId, projectId })
    if (zone === null) throw dnsErrors.zoneNotFound()
    return hosted(zone)
  }

  /** The project's zone a record id names; 404 for the record when there is none. */
  async ofRecord (projectId: string, recordId: string): Promise<HostedZone> {
    const zoneId = zoneIdOf(recordId)
    if (zoneId === null) throw dnsErrors.recordNotFound()
    return await this.find(projectId, zoneId).catch((error: unknown) => {
      throw dnsErrors.zoneNotFound.is(error) ? dnsErrors.recordNotFound() : error
    })
  }

  /** What the API shows of a zone. */
  view (zone: HostedZone): Zone {
    return { id: zone.id, name: zone.name, providerId: zone.providerId, providerKind: zone.providerKind, nameservers: zone.nameservers, createdAt: zone.createdAt, updatedAt: zone.updatedAt }
  }

  /** The zone's provider, ready for record operations. */
  async open (zone: HostedZone): Promise<{ ref: ZoneRef, provider: DnsProvider }> {
    const { provider } = await this.deps.providers.open(zone.projectId, zone.providerId)
    return { ref: zoneRef(zone), provider }
  }

  /**
   * The zone is reserved here first (its unique host key), then checked for
   * overlap and created at the provider; if either refuses, the reservation
   * goes.
   */
  async create (projectId: string, input: { name: string, providerId?: string }): Promise<HostedZone> {
    const name = zoneName(input.name)
    const providerId = input.providerId ?? BUILTIN_PROVIDER_ID
    const { provider, accountKey } = await this.deps.providers.open(projectId, providerId)
    if (await this.zones.countDocuments({ projectId }) >= MAX_ZONES_PER_PROJECT) {
      throw dnsErrors.tooManyZones({ limit: MAX_ZONES_PER_PROJECT })
    }
    if (provider.kind === 'builtin') this.refuseReserved(name)
    const now = this.deps.clock.now()
    const id = this.deps.newId()
    const record: ZoneRecord = {
      projectId, providerId, providerKind: provider.kind, name, hostKey: `${accountKey}:${name}`, externalId: null, nameservers: this.deps.nameservers, createdAt: now, updatedAt: now
    }
    try {
      await this.zones.insertOne({ ...record, _id: id })
    } catch (error) {
      if (error instanceof DuplicateKeyError) throw dnsErrors.zoneExists({ name, holder: 'This provider' })
      throw error
    }
    try {
      if (provider.kind === 'builtin') await this.refuseOverlap(projectId, name)
      record.externalId = await provider.createZone({ id, name, nameservers: record.nameservers })
    } catch (error) {
      await this.zones.deleteOne({ _id: id })
      throw error
    }
    if (record.externalId !== null) await this.zones.updateOne({ _id: id }, { $set: { externalId: record.externalId } })
    return hosted({ ...record, _id: id })
  }

  /**
   * The operator's own names (the nameservers every zone delegates to, the
   * gateway, the server's public host, the apps domain) are no project's to
   * claim on the built-in server: a zone at, around or inside one would
   * answer for them.
   */
  private refuseReserved (name: string): void {
    const reserved = [...this.deps.nameservers, ...(this.deps.reservedHosts ?? [])].find((host) => host === name || host.endsWith(`.${name}`) || name.endsWith(`.${host}`))
    if (reserved !== undefined) throw dnsErrors.zoneReserved({ name, reserved })
  }

  /**
   * On the one built-in server a zone inside another project's zone (or
   * around it) would take over that project's names, so it is refused.
   * Asked once this zone's own record is written: of two overlapping creates
   * that race, the later check always sees the other's record, so they cannot
   * both pass (at worst both are refused, and a retry decides).
   */
  private async refuseOverlap (projectId: string, name: string): Promise<void> {
    const labels = name.split('.')
    const parents = labels.slice(1).map((_, index) => `${BUILTIN_PROVIDER_ID}:${labels.slice(index + 1).join('.')}`)
    const escaped = name.replace(/\./g, '\\.')
    const overlapping = await this.zones.findOne({
      providerKind: 'builtin',
      projectId: { $ne: projectId },
      $or: [{ hostKey: { $in: parents } }, { name: { $regex: `\\.${escaped}$` } }]
    })
    if (overlapping !== null) throw dnsErrors.zoneOverlap({ name, other: overlapping.name })
  }

  /** Deletes the zone at its provider and here. */
  async delete (zone: HostedZone): Promise<void> {
    const { ref, provider } = await this.open(zone)
    await provider.deleteZone(ref)
    await this.zones.deleteOne({ _id: zone.id })
  }

  /**
   * When a project goes: its zones on the built-in server go with it; zones
   * at external providers stay there (they may serve live names), only our
   * record of them goes.
   */
  async deleteAllForProject (projectId: string): Promise<void> {
    for (const zone of await this.zones.find({ projectId }).toArray()) {
      if (zone.providerKind === 'builtin') {
        const { provider } = await this.deps.providers.open(projectId, zone.providerId)
        await provider.deleteZone(zoneRef(hosted(zone)))
      }
      await this.zones.deleteOne({ _id: zone._id })
    }
  }

  async countOnProvider (projectId: string, providerId: string): Promise<number> {
    return await this.zones.countDocuments({ projectId, providerId })
  }

  /** The project's zone holding `hostname` (the longest match), if any. */
  async zoneHolding (projectId: string, hostname: string): Promise<HostedZone | null> {
    const labels = hostname.split('.')
    const suffixes = labels.map((_, index) => labels.slice(index).join('.'))
    const found = await this.zones.find({ projectId, name: { $in: suffixes } }).toArray()
    found.sort((a, b) => b.name.length - a.name.length)
    return found.length === 0 ? null : hosted(found[0])
  }
}
