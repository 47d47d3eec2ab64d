import type { RecordData, RRsetChange } from '../changes.js'

export const PROVIDER_KINDS = ['builtin', 'powerdns', 'cloudflare', 'route53'] as const
export type ProviderKind = typeof PROVIDER_KINDS[number]

/** A zone as a provider sees it: our id, its name, and the provider's own handle for it when it has one. */
export interface ZoneRef { id: string, name: string, externalId: string | null }

export interface ZoneSetup { id: string, name: string, nameservers: string[] }

/** A zone's records as read, with the version a conditional write must still find (null when the provider has none to offer). */
export interface ZoneContents { records: RecordData[], version: number | null }

/**
 * What every DNS provider offers, in the terms the providers share: whole
 * record sets (a name and type) replaced or removed. PowerDNS PATCHes
 * rrsets, Route 53 UPSERTs and DELETEs them in one change batch, Cloudflare
 * runs its batch endpoint, the built-in server rewrites its zone document;
 * each applies one call's changes all together.
 */
export interface DnsProvider {
  readonly kind: ProviderKind
  /** Whether the provider flattens a CNAME-like target at the apex (Cloudflare's CNAME flattening, Route 53's alias, PowerDNS's ALIAS). */
  readonly apexAlias: boolean
  /** Resolves when the provider answers with these credentials; throws an AppError saying why not. */
  check (): Promise<void>
  /** Creates the zone with its SOA and NS; returns the provider's handle for it. */
  createZone (zone: ZoneSetup): Promise<string | null>
  deleteZone (zone: ZoneRef): Promise<void>
  /** Every record of the zone, the SOA included where the provider shows it. */
  readZone (zone: ZoneRef): Promise<ZoneContents>
  /** Applies `changes` together; `version` from readZone lets a provider refuse a write over a change it did not see (a StaleZoneError). */
  replaceRRsets (zone: ZoneRef, changes: RRsetChange[], version: number | null): Promise<void>
}

/** The zone changed between reading it and writing it: read again and re-apply. */
export class StaleZoneError extends Error {
  constructor (zoneId: string) {
    super(`zone ${zoneId} changed meanwhile`)
    this.name = 'StaleZoneError'
  }
}
