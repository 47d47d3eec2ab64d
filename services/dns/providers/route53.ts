import { randomUUID } from 'node:crypto'
import { dnsErrors } from '../errors.js'
import type { RecordData, RRsetChange } from '../changes.js'
import type { AddressGuard } from '../../outbound/internal-addresses.js'
import { callProvider, refusal, type ProviderAnswer } from './http.js'
import { signV4, type AwsCredentials } from './sigv4.js'
import type { DnsProvider, ZoneContents, ZoneRef, ZoneSetup } from './types.js'
import { fromProvider, providerContent } from './wire-text.js'
import { child, children, escapeXml, parseXml, textOf, type XmlElement } from './xml.js'

export interface Route53Settings extends AwsCredentials { guard: AddressGuard, endpoint: string }

const LABEL = 'Route 53'
const VERSION = '/2013-04-01'
const NS = 'https://route53.amazonaws.com/doc/2013-04-01/'
// Route 53 is global; its API is signed for us-east-1 (the AWS docs' "Route 53 endpoints and quotas").
const SCOPE = { region: 'us-east-1', service: 'route53' }

interface RRset { name: string, type: string, ttl: number, values: string[] }

/** Route 53 writes `*` and other octets outside letters, digits, `-` and `_` as `\NNN` (octal). */
function unescapeName (name: string): string {
  return name.replace(/\\(\d{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8))).toLowerCase().replace(/\.$/, '')
}

/**
 * Route 53's REST API (XML, Signature Version 4). A change batch is applied
 * as one transaction; DELETE must name a set's current values, so a change
 * reads the sets it replaces first. A hosted zone must be emptied (all but
 * its SOA and apex NS) before Route 53 lets it go.
 */
export class Route53Provider implements DnsProvider {
  readonly kind = 'route53' as const
  // Route 53's alias records point only at AWS resources, not at a host name of ours.
  readonly apexAlias = false

  constructor (private readonly settings: Route53Settings, private readonly now: () => Date = () => new Date()) {}

  private async call (method: string, path: string, body = ''): Promise<{ answer: ProviderAnswer, xml: XmlElement | null }> {
    const url = new URL(`${this.settings.endpoint}${VERSION}${path}`)
    const headers = signV4({ method, url, headers: body === '' ? {} : { 'content-type': 'application/xml' }, body }, this.settings, SCOPE, this.now())
    delete headers.host
    const answer = await callProvider(this.settings.guard, LABEL, url.href, { method, headers, ...(body === '' ? {} : { body }) })
    let xml: XmlElement | null = null
    try { xml = answer.text === '' ? null : parseXml(answer.text) } catch { xml = null }
    return { answer, xml }
  }

  private fail (answer: ProviderAnswer, xml: XmlElement | null): Error {
    const error = child(xml ?? undefined, 'Error')
    const said = error === undefined ? textOf(xml ?? undefined, 'Message') : `${textOf(error, 'Message') ?? ''} (${textOf(error, 'Code') ?? ''})`
    return refusal(LABEL, answer, said)
  }

  private zonePath (zone: ZoneRef): string {
    if (zone.externalId === null) throw dnsErrors.providerFailed({ reason: `The zone ${zone.name} has no Route 53 id` })
    return `/hostedzone/${encodeURIComponent(zone.externalId)}`
  }

  async check (): Promise<void> {
    const { answer, xml } = await this.call('GET', '/hostedzonecount')
    if (answer.status !== 200) throw this.fail(answer, xml)
  }

  async createZone (zone: ZoneSetup): Promise<string | null> {
    const body = `<?xml version="1.0" encoding="UTF-8"?>\n<CreateHostedZoneRequest xmlns="${NS}"><Name>${escapeXml(zone.name)}.</Name><CallerReference>${randomUUID()}</CallerReference></CreateHostedZoneRequest>`
    const { answer, xml } = await this.call('POST', '/hostedzone', body)
    if (answer.status === 409) throw dnsErrors.zoneExists({ name: zone.name, holder: 'Route 53', said: textOf(child(xml ?? undefined, 'Error'), 'Message') })
    const id = textOf(child(xml ?? undefined, 'HostedZone'), 'Id')
    if (answer.status !== 201 || id === undefined) throw this.fail(answer, xml)
    return id.replace(/^\/hostedzone\//, '')
  }

  async deleteZone (zone: ZoneRef): Promise<void> {
    const sets = await this.rrsets(zone)
    const removable = sets.filter((set) => !(set.name === zone.name && (set.type === 'SOA' || set.type === 'NS')))
    if (removable.length > 0) await this.changeBatch(zone, removable.map((set) => ({ action: 'DELETE', set })))
    const { answer, xml } = await this.call('DELETE', this.zonePath(zone))
    if (answer.status !== 200 && answer.status !== 404) throw this.fail(answer, xml)
  }

  private async rrsets (zone: ZoneRef): Promise<RRset[]> {
    const sets: RRset[] = []
    let next = ''
    for (;;) {
      const { answer, xml } = await this.call('GET', `${this.zonePath(zone)}/rrset?maxitems=300${next}`)
      if (answer.status !== 200 || xml === null) throw this.fail(answer, xml)
      for (const set of children(child(xml, 'ResourceRecordSets'), 'ResourceRecordSet')) {
        const values = children(child(set, 'ResourceRecords'), 'ResourceRecord').map((record) => textOf(record, 'Value') ?? '')
        sets.push({ name: unescapeName(textOf(set, 'Name') ?? ''), type: textOf(set, 'Type') ?? '', ttl: Number(textOf(set, 'TTL') ?? 0), values })
      }
      if (textOf(xml, 'IsTruncated') !== 'true') return sets
      next = `&name=${encodeURIComponent(textOf(xml, 'NextRecordName') ?? '')}&type=${encodeURIComponent(textOf(xml, 'NextRecordType') ?? '')}`
    }
  }

  async readZone (zone: ZoneRef): Promise<ZoneContents> {
    const records: RecordData[] = []
    for (const set of await this.rrsets(zone)) {
      for (const value of set.values) {
        const record = fromProvider(set.name, set.type, set.ttl, value)
        if (record !== null) records.push(record)
      }
    }
    return { records, version: null }
  }

  async replaceRRsets (zone: ZoneRef, changes: RRsetChange[]): Promise<void> {
    const current = new Map((await this.rrsets(zone)).map((set) => [`${set.name} ${set.type}`, set]))
    const batch: Array<{ action: 'UPSERT' | 'DELETE', set: RRset }> = []
    for (const change of changes) {
      if (change.contents.length > 0) {
        batch.push({ action: 'UPSERT', set: { name: change.name, type: change.type, ttl: change.ttl, values: change.contents.map((content) => providerContent(change.type, content)) } })
        continue
      }
      const existing = current.get(`${change.name} ${change.type}`)
      if (existing !== undefined) batch.push({ action: 'DELETE', set: existing })
    }
    if (batch.length > 0) await this.changeBatch(zone, batch)
  }

  private async changeBatch (zone: ZoneRef, batch: Array<{ action: 'UPSERT' | 'DELETE', set: RRset }>): Promise<void> {
    const changes = batch.map(({ action, set }) => `<Change><Action>${action}</Action><ResourceRecordSet><Name>${escapeXml(set.name)}.</Name><Type>${set.type}</Type><TTL>${set.ttl}</TTL><ResourceRecords>${set.values.map((value) => `<ResourceRecord><Value>${escapeXml(value)}</Value></ResourceRecord>`).join('')}</ResourceRecords></ResourceRecordSet></Change>`).join('')
    const body = `<?xml version="1.0" encoding="UTF-8"?>\n<ChangeResourceRecordSetsRequest xmlns="${NS}"><ChangeBatch><Changes>${changes}</Changes></ChangeBatch></ChangeResourceRecordSetsRequest>`
    const { answer, xml } = await this.call('POST', `${this.zonePath(zone)}/rrset`, body)
    if (answer.status !== 200) throw this.fail(answer, xml)
  }
}
