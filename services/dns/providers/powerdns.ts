import { dnsErrors } from '../errors.js'
import type { RecordData, RRsetChange } from '../changes.js'
import { DEFAULT_TTL } from '../changes.js'
import type { AddressGuard } from '../../outbound/internal-addresses.js'
import { callProvider, refusal, type ProviderAnswer } from './http.js'
import type { DnsProvider, ZoneContents, ZoneRef, ZoneSetup } from './types.js'
import { fromProvider, providerContent } from './wire-text.js'

export interface PowerDnsSettings { guard: AddressGuard, endpoint: string, serverId: string, apiKey: string }

interface PdnsRRset { name: string, type: string, ttl: number, records: Array<{ content: string, disabled: boolean }> }

const LABEL = 'PowerDNS'

/**
 * A PowerDNS Authoritative server through its HTTP API
 * (`/api/v1/servers/:server/zones`, `X-API-Key`). A PATCH of rrsets is one
 * transaction there, and `soa_edit_api` makes PowerDNS bump the serial on
 * every change made through the API.
 */
export class PowerDnsProvider implements DnsProvider {
  readonly kind = 'powerdns' as const
  // PowerDNS serves ALIAS at the apex when its `resolver` setting is on.
  readonly apexAlias = true

  constructor (private readonly settings: PowerDnsSettings) {}

  private async call (method: string, path: string, body?: unknown): Promise<ProviderAnswer> {
    const url = `${this.settings.endpoint}/api/v1/servers/${encodeURIComponent(this.settings.serverId)}${path}`
    return await callProvider(this.settings.guard, LABEL, url, {
      method,
      headers: { 'x-api-key': this.settings.apiKey, accept: 'application/json', ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    })
  }

  private fail (answer: ProviderAnswer): Error {
    return refusal(LABEL, answer, (answer.body as { error?: string } | null)?.error)
  }

  private zonePath (zone: ZoneRef): string {
    return `/zones/${encodeURIComponent(zone.externalId ?? `${zone.name}.`)}`
  }

  async check (): Promise<void> {
    const answer = await this.call('GET', '')
    if (answer.status !== 200) throw this.fail(answer)
  }

  async createZone (zone: ZoneSetup): Promise<string | null> {
    const soa = `${zone.nameservers[0]}. hostmaster.${zone.name}. 1 7200 3600 1209600 300`
    const answer = await this.call('POST', '/zones', {
      name: `${zone.name}.`,
      kind: 'Native',
      soa_edit_api: 'DEFAULT',
      nameservers: zone.nameservers.map((ns) => `${ns}.`),
      rrsets: [{ name: `${zone.name}.`, type: 'SOA', ttl: DEFAULT_TTL, changetype: 'REPLACE', records: [{ content: soa, disabled: false }] }]
    })
    if (answer.status === 409) throw dnsErrors.zoneExists({ name: zone.name, holder: 'PowerDNS' })
    if (answer.status !== 201) throw this.fail(answer)
    return (answer.body as { id: string }).id
  }

  async deleteZone (zone: ZoneRef): Promise<void> {
    const answer = await this.call('DELETE', this.zonePath(zone))
    if (answer.status !== 204 && answer.status !== 404) throw this.fail(answer)
  }

  async readZone (zone: ZoneRef): Promise<ZoneContents> {
    const answer = await this.call('GET', this.zonePath(zone))
    if (answer.status !== 200) throw this.fail(answer)
    const records: RecordData[] = []
    for (const rrset of (answer.body as { rrsets: PdnsRRset[] }).rrsets) {
      for (const { content, disabled } of rrset.records) {
        const record = disabled ? null : fromProvider(rrset.name, rrset.type, rrset.ttl, content)
        if (record !== null) records.push(record)
      }
    }
    return { records, version: null }
  }

  async replaceRRsets (zone: ZoneRef, changes: RRsetChange[]): Promise<void> {
    const rrsets = changes.map((change) => change.contents.length === 0
      ? { name: `${change.name}.`, type: change.type, changetype: 'DELETE' }
      : { name: `${change.name}.`, type: change.type, ttl: change.ttl, changetype: 'REPLACE', records: change.contents.map((content) => ({ content: providerContent(change.type, content), disabled: false })) })
    const answer = await this.call('PATCH', this.zonePath(zone), { rrsets })
    if (answer.status !== 204) throw this.fail(answer)
  }
}
