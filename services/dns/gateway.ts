import { createHmac } from 'node:crypto'
import type { GatewayInstructionsT } from '../../schemas/dns.js'
import { DEFAULT_TTL, recordId } from './changes.js'
import type { RecordType } from './content.js'
import { dnsErrors } from './errors.js'
import { zoneName } from './names.js'
import type { DnsRecords } from './records.js'
import type { HostedZone, Zones } from './zones.js'

export type GatewayInstructions = GatewayInstructionsT
type Instruction = GatewayInstructions['records'][number]

export interface GatewayTarget { host: string | null, ipv4: string[], ipv6: string[] }

const OWNERSHIP_LABEL = '_plinth-verify'
const ACME_LABEL = '_acme-challenge'

/**
 * What a hostname needs to reach the platform's gateway: a CNAME to the
 * gateway's host name below an apex, its addresses (or an ALIAS where the
 * provider flattens one) at an apex, which cannot hold a CNAME; a TXT
 * proving the project's claim; and where an ACME DNS-01 challenge goes.
 * The ownership value is an HMAC of the project and hostname, so the hosting
 * family can recompute it without anything stored.
 */
export class Gateway {
  constructor (private readonly deps: { zones: Zones, records: DnsRecords, target: GatewayTarget, ownershipKey: Buffer }) {}

  ownershipValue (projectId: string, hostname: string): string {
    const mac = createHmac('sha256', this.deps.ownershipKey).update(`${projectId}\n${hostname}`).digest('base64url').slice(0, 32)
    return `plinth-verify=${mac}`
  }

  async instructions (projectId: string, input: string): Promise<GatewayInstructions> {
    return (await this.plan(projectId, zoneName(input, 'query.hostname'))).instructions
  }

  /** Creates the missing records, together, in the project's zone holding the hostname. */
  async apply (projectId: string, input: string): Promise<GatewayInstructions> {
    const { instructions, zone } = await this.plan(projectId, zoneName(input, 'body.hostname'))
    if (zone === null) throw dnsErrors.zoneNotHosted({ hostname: instructions.hostname })
    if (instructions.records.some((record) => record.type === 'ALIAS')) throw dnsErrors.gatewayNotConfigured({ missing: 'addresses' })
    const missing = instructions.records.filter((record) => record.present !== true)
    if (missing.length > 0) {
      await this.deps.records.change(zone, {
        create: missing.map((record) => ({ name: `${record.name}.`, type: record.type as 'A' | 'AAAA' | 'CNAME' | 'TXT', ttl: record.ttl, content: record.content }))
      })
    }
    return { ...instructions, records: instructions.records.map((record) => ({ ...record, present: true })) }
  }

  private async plan (projectId: string, hostname: string): Promise<{ instructions: GatewayInstructions, zone: HostedZone | null }> {
    const zone = await this.deps.zones.zoneHolding(projectId, hostname)
    const { target } = this.deps
    // Without a zone here there is no telling where the registrable domain starts; two labels is the common case.
    const apex = zone === null ? hostname.split('.').length === 2 : zone.name === hostname
    const records: Instruction[] = []
    if (apex) {
      for (const address of target.ipv4) records.push({ name: hostname, type: 'A', content: address, ttl: DEFAULT_TTL, purpose: 'route' })
      for (const address of target.ipv6) records.push({ name: hostname, type: 'AAAA', content: address, ttl: DEFAULT_TTL, purpose: 'route' })
      const alias = zone === null ? true : (await this.deps.zones.open(zone)).provider.apexAlias
      if (records.length === 0 && target.host !== null && alias) records.push({ name: hostname, type: 'ALIAS', content: target.host, ttl: DEFAULT_TTL, purpose: 'route' })
      if (records.length === 0) throw dnsErrors.gatewayNotConfigured({ missing: 'addresses' })
    } else {
      if (target.host === null) throw dnsErrors.gatewayNotConfigured({ missing: 'host name' })
      records.push({ name: hostname, type: 'CNAME', content: target.host, ttl: DEFAULT_TTL, purpose: 'route' })
    }
    records.push({ name: `${OWNERSHIP_LABEL}.${hostname}`, type: 'TXT', content: this.ownershipValue(projectId, hostname), ttl: DEFAULT_TTL, purpose: 'ownership' })
    const present = zone === null ? new Set<string>() : new Set((await this.deps.records.list(zone)).map((record) => record.id))
    const instructions: GatewayInstructions = {
      hostname,
      apex,
      hostedHere: zone !== null,
      zone: zone === null ? null : { id: zone.id, name: zone.name, providerId: zone.providerId, providerKind: zone.providerKind },
      records: records.map((record) => zone === null || record.type === 'ALIAS' ? record : { ...record, present: present.has(recordId(zone.id, { ...record, type: record.type as RecordType })) }),
      acmeChallengeName: `${ACME_LABEL}.${hostname}`
    }
    return { instructions, zone }
  }
}
