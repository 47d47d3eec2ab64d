import { dnsErrors } from '../errors.js'
import type { RecordData, RRsetChange } from '../changes.js'
import { caaParts } from '../content.js'
import type { AddressGuard } from '../../outbound/internal-addresses.js'
import { callProvider, refusal, type ProviderAnswer } from './http.js'
import type { DnsProvider, ZoneContents, ZoneRef, ZoneSetup } from './types.js'
import { fromProvider } from './wire-text.js'

export interface CloudflareSettings { guard: AddressGuard, endpoint: string, accountId: string | null, apiToken: string }

interface CfRecord { id: string, name: string, type: string, content: string, ttl: number, priority?: number, data?: Record<string, unknown> }
interface CfEnvelope<T> { success: boolean, errors?: Array<{ code: number, message: string }>, result: T }

const LABEL = 'Cloudflare'
// Cloudflare's "automatic" TTL; shown to us as its usual value.
const AUTO_TTL = 1
const AUTO_AS = 300
const PAGE = 5000

/**
 * Cloudflare's v4 API with an API token. Its records carry ids of their own,
 * so a record-set change becomes deletes and posts sent together through the
 * batch endpoint, which Cloudflare applies as one transaction. SOA and apex
 * NS are Cloudflare's and are not listed.
 */
export class CloudflareProvider implements DnsProvider {
  readonly kind = 'cloudflare' as const
  // CNAME flattening: a CNAME at the apex is answered as the target's addresses.
  readonly apexAlias = true

  constructor (private readonly settings: CloudflareSettings) {}

  private async call<T> (method: string, path: string, body?: unknown): Promise<{ answer: ProviderAnswer, result: T | null }> {
    const answer = await callProvider(this.settings.guard, LABEL, `${this.settings.endpoint}${path}`, {
      method,
      headers: { authorization: `Bearer ${this.settings.apiToken}`, accept: 'application/json', ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    })
    const envelope = answer.body as CfEnvelope<T> | null
    return { answer, result: envelope?.success === true ? envelope.result : null }
  }

  private fail (answer: ProviderAnswer): Error {
    const errors = (answer.body as CfEnvelope<unknown> | null)?.errors
    return refusal(LABEL, answer, errors?.map((error) => `${error.message} (${error.code})`).join('; '))
  }

  async check (): Promise<void> {
    const { answer, result } = await this.call<{ status: string }>('GET', '/user/tokens/verify')
    if (result === null) throw this.fail(answer)
    if (result.status !== 'active') throw dnsErrors.providerFailed({ reason: `Cloudflare says the API token is ${result.status}` })
  }

  async createZone (zone: ZoneSetup): Promise<string | null> {
    if (this.settings.accountId === null) throw dnsErrors.providerFailed({ reason: 'Creating a zone at Cloudflare needs the provider\'s accountId' })
    const { answer, result } = await this.call<{ id: string }>('POST', '/zones', { name: zone.name, account: { id: this.settings.accountId }, type: 'full' })
    if (result !== null) return result.id
    // 1061: "already exists" in Cloudflare's error codes.
    if ((answer.body as CfEnvelope<unknown> | null)?.errors?.some((error) => error.code === 1061) === true) throw dnsErrors.zoneExists({ name: zone.name, holder: 'Cloudflare' })
    throw this.fail(answer)
  }

  async deleteZone (zone: ZoneRef): Promise<void> {
    const { answer, result } = await this.call('DELETE', `/zones/${encodeURIComponent(this.zoneId(zone))}`)
    if (result === null && answer.status !== 404) throw this.fail(answer)
  }

  private zoneId (zone: ZoneRef): string {
    if (zone.externalId === null) throw dnsErrors.providerFailed({ reason: `The zone ${zone.name} has no Cloudflare id` })
    return zone.externalId
  }

  private async records (zone: ZoneRef): Promise<CfRecord[]> {
    const all: CfRecord[] = []
    for (let page = 1; ; page++) {
      const { answer, result } = await this.call<CfRecord[]>('GET', `/zones/${encodeURIComponent(this.zoneId(zone))}/dns_records?per_page=${PAGE}&page=${page}`)
      if (result === null) throw this.fail(answer)
      all.push(...result)
      if (result.length < PAGE) return all
    }
  }

  async readZone (zone: ZoneRef): Promise<ZoneContents> {
    const records: RecordData[] = []
    for (const record of await this.records(zone)) {
      const ttl = record.ttl === AUTO_TTL ? AUTO_AS : record.ttl
      const read = fromProvider(record.name, record.type, ttl, contentOf(record))
      if (read !== null) records.push(read)
    }
    return { records, version: null }
  }

  async replaceRRsets (zone: ZoneRef, changes: RRsetChange[]): Promise<void> {
    const replaced = new Set(changes.map((change) => `${change.name} ${change.type}`))
    const deletes = (await this.records(zone))
      .filter((record) => replaced.has(`${record.name.toLowerCase()} ${record.type}`))
      .map((record) => ({ id: record.id }))
    const posts = changes.flatMap((change) => change.contents.map((content) => ({ name: change.name, type: change.type, ttl: change.ttl, ...fields(change.type, content) })))
    const { answer, result } = await this.call('POST', `/zones/${encodeURIComponent(this.zoneId(zone))}/dns_records/batch`, { deletes, posts })
    if (result === null) throw this.fail(answer)
  }
}

/** Our content as Cloudflare's fields: MX priority apart, SRV and CAA as `data`. */
function fields (type: string, content: string): Record<string, unknown> {
  const parts = content.split(' ')
  if (type === 'MX') return { content: parts[1], priority: Number(parts[0]) }
  if (type === 'SRV') return { data: { priority: Number(parts[0]), weight: Number(parts[1]), port: Number(parts[2]), target: parts[3] } }
  if (type === 'CAA') {
    const { flags, tag, value } = caaParts(content)
    return { data: { flags, tag, value: value.toString('utf8') } }
  }
  return { content }
}

function contentOf (record: CfRecord): string {
  const data = record.data ?? {}
  if (record.type === 'MX') return `${record.priority ?? 0} ${record.content}`
  if (record.type === 'SRV' && data.target !== undefined) return `${String(data.priority)} ${String(data.weight)} ${String(data.port)} ${String(data.target)}`
  if (record.type === 'CAA' && data.tag !== undefined) return `${String(data.flags)} ${String(data.tag)} "${String(data.value).replace(/["\\]/g, '\\$&')}"`
  return record.content
}
