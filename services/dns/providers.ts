import type { Clock } from '../platform/clock.js'
import type { SecretBox } from '../platform/crypto.js'
import type { AddressGuard } from '../outbound/internal-addresses.js'
import type { IdGenerator } from '../platform/ids.js'
import { isoString } from '../platform/iso-dates.js'
import type { Store, StoreCollection, WithId } from '../store/types.js'
import type { DnsProviderT, ProviderTestT } from '../../schemas/dns.js'
import type { BuiltinProvider } from './providers/builtin.js'
import { CloudflareProvider } from './providers/cloudflare.js'
import { PowerDnsProvider } from './providers/powerdns.js'
import { dnsErrors } from './errors.js'
import { internalEndpointProblem } from './endpoint-guard.js'
import { Route53Provider } from './providers/route53.js'
import type { DnsProvider } from './providers/types.js'
import { BUILTIN_PROVIDER_ID, type ProviderSource } from './zones.js'
import { sealedAt, type SealedValues } from '../platform/reseal.js'

export type ExternalKind = 'powerdns' | 'cloudflare' | 'route53'
export type DnsProviderView = DnsProviderT

export interface ProviderInput {
  name: string
  kind: ExternalKind
  endpoint?: string
  serverId?: string
  accountId?: string
  credentials: Credentials
}

interface Credentials { apiKey?: string, apiToken?: string, accessKeyId?: string, secretAccessKey?: string }

type ProviderRecord = {
  projectId: string
  name: string
  kind: ExternalKind
  endpoint: string
  serverId: string | null
  accountId: string | null
  /** The credentials as JSON, sealed under the master key and bound to this provider's id. */
  sealed: string
  createdAt: Date
  updatedAt: Date
}

const PROVIDERS = 'dns_providers'
export const MAX_PROVIDERS_PER_PROJECT = 20
const DEFAULT_ENDPOINTS: Record<ExternalKind, string | null> = { powerdns: null, cloudflare: 'https://api.cloudflare.com/client/v4', route53: 'https://route53.amazonaws.com' }
const SECRET_FIELDS: Record<ExternalKind, Array<keyof Credentials>> = { powerdns: ['apiKey'], cloudflare: ['apiToken'], route53: ['accessKeyId', 'secretAccessKey'] }

const sealedFor = (projectId: string, id: string) => `project:${projectId}:dns-provider:${id}`

/** Each provider's credentials, sealed under the master key, for the re-seal job. */
export const sealedDnsCredentials: SealedValues = {
  collection: PROVIDERS,
  values: (doc) => sealedAt(doc, 'sealed', sealedFor(doc.projectId as string, doc._id as string))
}

function endpointOf (kind: ExternalKind, given: string | undefined): string {
  const raw = given ?? DEFAULT_ENDPOINTS[kind]
  if (raw === null) throw dnsErrors.providerInvalid({ problem: `A ${kind} provider needs its API's endpoint`, path: 'body.endpoint', issue: 'is required for this kind' })
  let url: URL
  try { url = new URL(raw) } catch { throw dnsErrors.providerInvalid({ problem: `"${raw}" is not a URL`, path: 'body.endpoint', issue: 'must be an absolute http(s) URL' }) }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.username !== '' || url.password !== '' || url.search !== '' || url.hash !== '') {
    throw dnsErrors.providerInvalid({ problem: `"${raw}" is not an http(s) URL without credentials, query or fragment`, path: 'body.endpoint', issue: 'must be a plain http(s) URL' })
  }
  return url.href.replace(/\/+$/, '')
}

function toView (record: WithId<ProviderRecord>): DnsProviderView {
  return {
    id: record._id,
    name: record.name,
    kind: record.kind,
    endpoint: record.endpoint,
    serverId: record.serverId,
    accountId: record.accountId,
    hasCredentials: true,
    createdAt: isoString(record.createdAt),
    updatedAt: isoString(record.updatedAt)
  }
}

/**
 * A project's DNS providers: the built-in server, always there as `builtin`,
 * and configured accounts at PowerDNS, Cloudflare or Route 53. Credentials are sealed
 * at rest and never leave in an answer; they are opened only to build the
 * client for one call.
 */
export class DnsProviders implements ProviderSource {
  private readonly providers: StoreCollection<ProviderRecord>

  constructor (store: Store, private readonly deps: { clock: Clock, newId: IdGenerator, secrets: SecretBox, builtin: BuiltinProvider, guard: AddressGuard, zonesOn: (projectId: string, providerId: string) => Promise<number> }) {
    this.providers = store.collection<ProviderRecord>(PROVIDERS)
  }

  async init (): Promise<void> {
    await this.providers.createIndex({ projectId: 1, name: 1 })
  }

  builtinView (): DnsProviderView {
    return { id: BUILTIN_PROVIDER_ID, name: 'Built-in server', kind: 'builtin', endpoint: null, serverId: null, accountId: null, hasCredentials: false, createdAt: isoString(new Date(0)), updatedAt: isoString(new Date(0)) }
  }

  async list (projectId: string): Promise<DnsProviderView[]> {
    const records = await this.providers.find({ projectId }, { sort: { name: 1, _id: 1 } }).toArray()
    return [this.builtinView(), ...records.map(toView)]
  }

  async get (projectId: string, providerId: string): Promise<DnsProviderView> {
    if (providerId === BUILTIN_PROVIDER_ID) return this.builtinView()
    return toView(await this.record(projectId, providerId))
  }

  async create (projectId: string, input: ProviderInput): Promise<DnsProviderView> {
    const endpoint = endpointOf(input.kind, input.endpoint)
    const internal = await internalEndpointProblem(this.deps.guard, endpoint)
    if (internal !== null) throw dnsErrors.providerEndpointInternal({ why: internal })
    const credentials: Credentials = {}
    for (const field of SECRET_FIELDS[input.kind]) {
      const value = input.credentials[field]
      if (value === undefined || value.trim() === '') throw dnsErrors.providerInvalid({ problem: `A ${input.kind} provider needs credentials.${field}`, path: `body.credentials.${field}`, issue: 'is required for this kind' })
      credentials[field] = value
    }
    if (await this.providers.countDocuments({ projectId }) >= MAX_PROVIDERS_PER_PROJECT) {
      throw dnsErrors.tooManyProviders({ limit: MAX_PROVIDERS_PER_PROJECT })
    }
    const id = this.deps.newId()
    const now = this.deps.clock.now()
    const record: ProviderRecord = {
      projectId,
      name: input.name.trim(),
      kind: input.kind,
      endpoint,
      serverId: input.kind === 'powerdns' ? input.serverId ?? 'localhost' : null,
      accountId: input.kind === 'cloudflare' ? input.accountId ?? null : null,
      sealed: this.deps.secrets.seal(JSON.stringify(credentials), sealedFor(projectId, id)),
      createdAt: now,
      updatedAt: now
    }
    await this.providers.insertOne({ ...record, _id: id })
    return toView({ ...record, _id: id })
  }

  /** Refused while a zone is on it: the zone's records would be out of reach. */
  async delete (projectId: string, providerId: string): Promise<void> {
    await this.record(projectId, providerId)
    const zonesOnIt = await this.deps.zonesOn(projectId, providerId)
    if (zonesOnIt > 0) throw dnsErrors.providerInUse({ count: zonesOnIt })
    await this.providers.deleteOne({ _id: providerId, projectId })
  }

  /** When the project goes: its provider settings and their sealed credentials go too. */
  async deleteAllForProject (projectId: string): Promise<void> {
    await this.providers.deleteMany({ projectId })
  }

  /** Whether the provider answers with these credentials, and why not. */
  async test (projectId: string, providerId: string): Promise<ProviderTestT> {
    await this.get(projectId, providerId)
    try {
      const { provider } = await this.open(projectId, providerId)
      await provider.check()
      return { ok: true, message: `${provider.kind} answered with these credentials` }
    } catch (error) {
      if (dnsErrors.providerFailed.is(error)) return { ok: false, message: error.message }
      throw error
    }
  }

  async open (projectId: string, providerId: string): Promise<{ provider: DnsProvider, accountKey: string }> {
    if (providerId === BUILTIN_PROVIDER_ID) return { provider: this.deps.builtin, accountKey: BUILTIN_PROVIDER_ID }
    const record = await this.record(projectId, providerId)
    const secrets = JSON.parse(this.deps.secrets.open(record.sealed, sealedFor(projectId, providerId))) as Credentials
    return { provider: this.client(record, secrets), accountKey: providerId }
  }

  private client (record: ProviderRecord, secrets: Credentials): DnsProvider {
    switch (record.kind) {
      case 'powerdns': return new PowerDnsProvider({ guard: this.deps.guard, endpoint: record.endpoint, serverId: record.serverId ?? 'localhost', apiKey: secrets.apiKey ?? '' })
      case 'cloudflare': return new CloudflareProvider({ guard: this.deps.guard, endpoint: record.endpoint, accountId: record.accountId, apiToken: secrets.apiToken ?? '' })
      case 'route53': return new Route53Provider({ guard: this.deps.guard, endpoint: record.endpoint, accessKeyId: secrets.accessKeyId ?? '', secretAccessKey: secrets.secretAccessKey ?? '' })
    }
  }

  private async record (projectId: string, providerId: string): Promise<WithId<ProviderRecord>> {
    const record = await this.providers.findOne({ _id: providerId, projectId })
    if (record === null) throw dnsErrors.providerNotFound()
    return record
  }
}
