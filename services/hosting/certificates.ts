import { X509Certificate } from 'node:crypto'
import { Agent } from 'node:https'
import type { Authorization, Client, Order } from 'acme-client'
import { BoundedMap } from '../cache/bounded-map.js'
import type { Clock } from '../platform/clock.js'
import type { SecretBox } from '../platform/crypto.js'
import type { DnsRecords } from '../dns/records.js'
import type { HostedZone, Zones } from '../dns/zones.js'
import { AppError } from '../platform/errors.js'
import { hostingErrors } from './errors.js'
import { isoStringOrNull, isoString } from '../platform/iso-dates.js'
import { DuplicateKeyError } from '../store/errors.js'
import type { Store, StoreCollection, WithId } from '../store/types.js'
import { CERTIFICATE_RENEW_BEFORE_DAYS, type AcmeProblemT, type HostingCertificateT } from '../../schemas/hosting-hostnames.js'
import { hostnameOf, type HostingEventListener, type Hostnames } from './hostnames.js'
import type { CertificateSource, ChallengeSource } from './routing.js'
import { sealedAt, type SealedValues } from '../platform/reseal.js'

export type HostingCertificate = HostingCertificateT
export type AcmeChallengeType = 'http-01' | 'dns-01'

type CertificateRecord = {
  projectId: string
  appId: string
  hostname: string
  status: HostingCertificate['status']
  challenge: AcmeChallengeType
  /** The PEM chain, leaf first. */
  chain: string | null
  /** The leaf's private key, sealed with the hostname as associated data. */
  sealedKey: string | null
  issuer: string | null
  notBefore: Date | null
  notAfter: Date | null
  renewAfter: Date | null
  issuedAt: Date | null
  /** When `renewDue` next takes it: `renewAfter` after an issue, sooner after a failure. */
  nextAttemptAt: Date | null
  failures: number
  lastError: (Omit<AcmeProblemT, 'at'> & { at: Date }) | null
  /** One issue at a time per hostname, whichever node runs it. */
  leaseUntil: Date
  createdAt: Date
  updatedAt: Date
}

type AccountRecord = { sealedKey: string, email: string | null, accountUrl: string | null, createdAt: Date }

export interface CertificatesDeps {
  clock: Clock
  secrets: SecretBox
  hostnames: Pick<Hostnames, 'holder' | 'onRelease'>
  /** DNS-01 goes through the DNS family when one of the project's zones holds the hostname. */
  dns: { zones: Pick<Zones, 'zoneHolding'>, records: Pick<DnsRecords, 'change'> }
  acme: {
    /** HOSTING_ACME_DIRECTORY_URL; null: no certificates. */
    directoryUrl: string | null
    email: string | null
    /** HOSTING_ACME_CA_FILE's PEM: the roots the ACME client trusts instead of the system's. */
    caCertificates: string | null
    /** How the order and challenge states are polled. */
    polling?: { attempts: number, minMs: number, maxMs: number }
  }
  onEvent?: HostingEventListener
  /** Told of a certificate that could not be loaded for the TLS view. */
  onError?: (error: unknown) => void
}

/** The recurring job that runs `renewDue`, and how often: the plugin registers and schedules it. */
export const RENEW_CERTIFICATES_JOB = 'hosting.certificates.renew'
export const RENEW_CERTIFICATES_EVERY_MS = 3_600_000

const CERTIFICATES = 'hosting_certificates'
const ACCOUNTS = 'hosting_acme_accounts'
const DAY_MS = 86_400_000
const LEASE_MS = 10 * 60_000
const RETRY_MIN_MS = 3_600_000
const RETRY_MAX_MS = DAY_MS
const RENEW_BATCH = 50
const SERVED_CAPACITY = 10_000
const CHALLENGE_TTL = 60
const NO_LEASE = new Date(0)
// A CA validates within seconds; this waits up to about a minute before giving an order up.
const DEFAULT_POLLING = { attempts: 12, minMs: 500, maxMs: 10_000 }
// Problems raised before the CA gave one (a network failure, a refused request without a problem document).
const CLIENT_PROBLEM = 'urn:plinth:acme:client'

const keyContext = (hostname: string) => `hosting:certificate:${hostname}`
const accountContext = (directoryUrl: string) => `hosting:acme-account:${directoryUrl}`

/** Certificates' private keys and ACME account keys, sealed under the master key, for the re-seal job. */
export const sealedCertificateKeys: SealedValues = {
  collection: CERTIFICATES,
  values: (doc) => sealedAt(doc, 'sealedKey', keyContext(doc.hostname as string))
}
export const sealedAcmeAccountKeys: SealedValues = {
  collection: ACCOUNTS,
  values: (doc) => sealedAt(doc, 'sealedKey', accountContext(doc._id as string))
}

function toView (record: CertificateRecord): HostingCertificate {
  return {
    hostname: record.hostname,
    appId: record.appId,
    status: record.status,
    challenge: record.challenge,
    issuer: record.issuer,
    notBefore: isoStringOrNull(record.notBefore),
    notAfter: isoStringOrNull(record.notAfter),
    renewAfter: isoStringOrNull(record.renewAfter),
    issuedAt: isoStringOrNull(record.issuedAt),
    lastError: record.lastError === null ? null : { ...record.lastError, at: isoString(record.lastError.at) },
    updatedAt: isoString(record.updatedAt)
  }
}

/** 30 days before expiry, or halfway through a certificate that lives shorter than that allows. */
export function renewalTime (notBefore: Date, notAfter: Date): Date {
  const halfway = notBefore.getTime() + (notAfter.getTime() - notBefore.getTime()) / 2
  return new Date(Math.max(halfway, notAfter.getTime() - CERTIFICATE_RENEW_BEFORE_DAYS * DAY_MS))
}

class AcmeFailure extends Error {
  constructor (readonly problem: Omit<AcmeProblemT, 'at'>) { super(problem.detail) }
}

/**
 * TLS certificates for verified hostnames from an ACME CA: one account per
 * directory (its key sealed at rest), an order per hostname proven over
 * HTTP-01 (the gateway answers from `keyAuthorization`) or DNS-01 (a TXT
 * written through the DNS family), and renewal by `renewDue`, which a
 * recurring job calls. The gateway reads certificates synchronously by SNI
 * from an in-memory view that every write here updates.
 */
export class Certificates implements CertificateSource, ChallengeSource {
  private readonly certificates: StoreCollection<CertificateRecord>
  private readonly accounts: StoreCollection<AccountRecord>
  private readonly served = new BoundedMap<string, { key: string, cert: string } | null>(SERVED_CAPACITY)
  private readonly loading = new Set<string>()
  private readonly challenges = new BoundedMap<string, string>(SERVED_CAPACITY)
  private client: Promise<Client> | null = null

  constructor (store: Store, private readonly deps: CertificatesDeps) {
    this.certificates = store.collection<CertificateRecord>(CERTIFICATES)
    this.accounts = store.collection<AccountRecord>(ACCOUNTS)
  }

  /**
   * acme-client, loaded on first use: it and its dependencies cost ~0.5 s of CPU at start, and most servers
   * (and every test app) never issue a certificate.
   */
  private async acme (): Promise<typeof import('acme-client')> {
    const acme = await import('acme-client')
    // acme-client sends every request through its own axios instance: this trust reaches the ACME CA and nothing else.
    if (this.deps.acme.caCertificates !== null) acme.axios.defaults.httpsAgent = new Agent({ ca: this.deps.acme.caCertificates })
    return acme
  }

  async init (): Promise<void> {
    await this.certificates.createIndex({ nextAttemptAt: 1 })
    await this.certificates.createIndex({ projectId: 1, appId: 1 })
    this.deps.hostnames.onRelease(async (released) => { await this.forget(released.hostname) })
    await this.refresh()
  }

  /** Reloads the TLS view from the Store: at start, and on a node that did not write the change itself. */
  async refresh (): Promise<void> {
    this.served.clear()
    const issued = await this.certificates.find({ chain: { $ne: null } }, { limit: SERVED_CAPACITY }).toArray()
    for (const record of issued) this.served.set(record.hostname, this.opened(record))
  }

  certificateFor (host: string): { key: string, cert: string } | null {
    const hit = this.served.get(host)
    if (hit !== undefined) return hit
    // Not in view (evicted, or written by another node): looked up for the next handshake, never waited for here.
    if (!this.loading.has(host)) {
      this.loading.add(host)
      this.load(host).catch((error: unknown) => this.deps.onError?.(error)).finally(() => this.loading.delete(host))
    }
    return null
  }

  keyAuthorization (token: string): string | null {
    return this.challenges.get(token) ?? null
  }

  async list (projectId: string, appId: string): Promise<HostingCertificate[]> {
    return (await this.certificates.find({ projectId, appId }, { sort: { hostname: 1 } }).toArray()).map(toView)
  }

  async get (projectId: string, appId: string, hostname: string): Promise<HostingCertificate> {
    const record = await this.certificates.findOne({ _id: hostnameOf(hostname, 'params.hostname'), projectId, appId })
    if (record === null) throw hostingErrors.certificateNotFound()
    return toView(record)
  }

  /**
   * Orders a certificate for a verified hostname and waits for it. A failure
   * is kept with the CA's problem document (a certificate already issued
   * stays served) and answered as a 502.
   */
  async issue (projectId: string, appId: string, input: string, options: { challenge?: AcmeChallengeType } = {}): Promise<HostingCertificate> {
    const hostname = hostnameOf(input, 'params.hostname')
    const holder = await this.deps.hostnames.holder(hostname)
    if (holder === null || holder.projectId !== projectId || holder.appId !== appId) throw hostingErrors.hostnameNotFound()
    if (holder.status !== 'verified') throw hostingErrors.hostnameNotVerified({ hostname })
    const directoryUrl = this.deps.acme.directoryUrl
    if (directoryUrl === null) throw hostingErrors.acmeNotConfigured()
    const zone = await this.deps.dns.zones.zoneHolding(projectId, hostname)
    const challenge = options.challenge ?? (zone === null ? 'http-01' : 'dns-01')
    if (challenge === 'dns-01' && zone === null) throw hostingErrors.zoneNotHosted({ hostname })
    const record = await this.claim(projectId, appId, hostname, challenge)
    const now = this.deps.clock.now()
    try {
      const { chain, key } = await this.order(directoryUrl, hostname, challenge, zone)
      const leaf = new X509Certificate(chain)
      const notBefore = new Date(leaf.validFrom)
      const notAfter = new Date(leaf.validTo)
      const renewAfter = renewalTime(notBefore, notAfter)
      const set: Partial<CertificateRecord> = {
        status: 'issued',
        chain,
        sealedKey: this.deps.secrets.seal(key, keyContext(hostname)),
        issuer: leaf.issuer.replace(/\n/g, ', '),
        notBefore,
        notAfter,
        renewAfter,
        issuedAt: now,
        nextAttemptAt: renewAfter,
        failures: 0,
        lastError: null,
        leaseUntil: NO_LEASE,
        updatedAt: this.deps.clock.now()
      }
      await this.certificates.updateOne({ _id: hostname }, { $set: set })
      this.served.set(hostname, { key, cert: chain })
      await this.deps.onEvent?.(record.chain === null ? 'certificate.issued' : 'certificate.renewed', { projectId, appId, hostname, notAfter: notAfter.toISOString(), challenge })
      return toView({ ...record, ...set })
    } catch (error) {
      const problem = error instanceof AcmeFailure ? error.problem : { type: CLIENT_PROBLEM, detail: (error as Error).message, status: null }
      const failures = record.failures + 1
      const retryMs = Math.min(RETRY_MIN_MS * 2 ** (failures - 1), RETRY_MAX_MS)
      const set: Partial<CertificateRecord> = {
        status: record.chain === null ? 'failed' : 'issued', failures, lastError: { ...problem, at: now }, nextAttemptAt: new Date(now.getTime() + retryMs), leaseUntil: NO_LEASE, updatedAt: this.deps.clock.now()
      }
      await this.certificates.updateOne({ _id: hostname }, { $set: set })
      await this.deps.onEvent?.('certificate.failed', { projectId, appId, hostname, problem })
      throw hostingErrors.certificateFailed({ hostname, detail: problem.detail })
    }
  }

  /** Renews (or retries) every certificate due by `now`, one after another; what a recurring job runs. */
  async renewDue (now: Date = this.deps.clock.now()): Promise<{ renewed: string[], failed: string[] }> {
    const due = await this.certificates.find({ nextAttemptAt: { $lte: now } }, { sort: { nextAttemptAt: 1 }, limit: RENEW_BATCH }).toArray()
    const renewed: string[] = []
    const failed: string[] = []
    for (const record of due) {
      const holder = await this.deps.hostnames.holder(record.hostname)
      if (holder === null || holder.projectId !== record.projectId || holder.appId !== record.appId) {
        await this.forget(record.hostname)
        continue
      }
      try {
        await this.issue(record.projectId, record.appId, record.hostname, { challenge: record.challenge })
        renewed.push(record.hostname)
      } catch (error) {
        if (!(error instanceof AppError)) throw error
        failed.push(record.hostname)
      }
    }
    return { renewed, failed }
  }

  /** The certificate goes with its hostname. */
  async forget (hostname: string): Promise<void> {
    await this.certificates.deleteOne({ _id: hostname })
    this.served.delete(hostname)
  }

  private async claim (projectId: string, appId: string, hostname: string, challenge: AcmeChallengeType): Promise<WithId<CertificateRecord>> {
    const now = this.deps.clock.now()
    const leaseUntil = new Date(now.getTime() + LEASE_MS)
    const fresh: WithId<CertificateRecord> = {
      _id: hostname,
      projectId,
      appId,
      hostname,
      status: 'pending',
      challenge,
      chain: null,
      sealedKey: null,
      issuer: null,
      notBefore: null,
      notAfter: null,
      renewAfter: null,
      issuedAt: null,
      nextAttemptAt: null,
      failures: 0,
      lastError: null,
      leaseUntil,
      createdAt: now,
      updatedAt: now
    }
    try {
      await this.certificates.insertOne(fresh)
      return fresh
    } catch (error) {
      if (!(error instanceof DuplicateKeyError)) throw error
    }
    const claimed = await this.certificates.findOneAndUpdate({ _id: hostname, leaseUntil: { $lt: now } }, { $set: { leaseUntil, challenge, updatedAt: now } }, { returnDocument: 'after' })
    if (claimed === null) throw hostingErrors.certificateInProgress({ hostname })
    return claimed
  }

  private async order (directoryUrl: string, hostname: string, type: AcmeChallengeType, zone: HostedZone | null): Promise<{ chain: string, key: string }> {
    const client = await this.acmeClient(directoryUrl)
    const order = await client.createOrder({ identifiers: [{ type: 'dns', value: hostname }] })
    for (const authz of await client.getAuthorizations(order)) {
      if (authz.status === 'valid') continue
      const challenge = authz.challenges.find((candidate) => candidate.type === type)
      if (challenge === undefined) throw new AcmeFailure({ type: CLIENT_PROBLEM, detail: `The CA offers no ${type} challenge for ${hostname}`, status: null })
      const keyAuthorization = await client.getChallengeKeyAuthorization(challenge)
      const withdraw = await this.publish(hostname, type, challenge.token, keyAuthorization, zone)
      try {
        await client.completeChallenge(challenge)
        await client.waitForValidStatus(challenge).catch(async (error: unknown) => { throw await this.challengeProblem(client, order, authz, error) })
      } finally {
        await withdraw()
      }
    }
    const { crypto: acmeCrypto } = await this.acme()
    const key = (await acmeCrypto.createPrivateEcdsaKey('P-256')).toString()
    const [, csr] = await acmeCrypto.createCsr({ commonName: hostname }, key)
    const finalized = await client.finalizeOrder(order, csr)
    const chain = await client.getCertificate(finalized)
    return { chain, key }
  }

  /** Makes the challenge answerable; resolves with what takes it back. */
  private async publish (hostname: string, type: AcmeChallengeType, token: string, keyAuthorization: string, zone: HostedZone | null): Promise<() => Promise<void>> {
    if (type === 'http-01' || zone === null) {
      this.challenges.set(token, keyAuthorization)
      return async () => { this.challenges.delete(token) }
    }
    const { written } = await this.deps.dns.records.change(zone, {
      create: [{ name: `_acme-challenge.${hostname}.`, type: 'TXT', ttl: CHALLENGE_TTL, content: keyAuthorization }]
    })
    return async () => { await this.deps.dns.records.change(zone, { delete: written.map((record) => record.id) }) }
  }

  /** The CA's own problem document for a failed challenge (RFC 8555 §7.1.4 `error`), where it gave one. */
  private async challengeProblem (client: Client, order: Order, authz: Authorization, cause: unknown): Promise<AcmeFailure> {
    const current = (await client.getAuthorizations(order).catch(() => [])).find((candidate) => candidate.url === authz.url)
    const failed = current?.challenges.find((challenge) => challenge.error !== undefined)?.error as Partial<Omit<AcmeProblemT, 'at'>> | undefined
    return new AcmeFailure({ type: failed?.type ?? CLIENT_PROBLEM, detail: failed?.detail ?? (cause as Error).message, status: failed?.status ?? null })
  }

  /** One account per directory, created once (by whichever node gets there first) and kept sealed. */
  private async acmeClient (directoryUrl: string): Promise<Client> {
    this.client ??= this.openAccount(directoryUrl).catch((error: unknown) => {
      this.client = null
      throw error
    })
    return await this.client
  }

  private async openAccount (directoryUrl: string): Promise<Client> {
    const account = await this.account(directoryUrl)
    const polling = { ...DEFAULT_POLLING, ...this.deps.acme.polling }
    const { Client } = await this.acme()
    const client = new Client({
      directoryUrl, accountKey: this.deps.secrets.open(account.sealedKey, accountContext(directoryUrl)), backoffAttempts: polling.attempts, backoffMin: polling.minMs, backoffMax: polling.maxMs
    })
    // newAccount with a known key answers the existing account, so this is also how a CA that forgot us learns it again.
    const email = this.deps.acme.email
    await client.createAccount({ termsOfServiceAgreed: true, ...(email === null ? {} : { contact: [`mailto:${email}`] }) })
    if (account.accountUrl !== client.getAccountUrl()) await this.accounts.updateOne({ _id: directoryUrl }, { $set: { accountUrl: client.getAccountUrl() } })
    return client
  }

  private async account (directoryUrl: string): Promise<WithId<AccountRecord>> {
    for (;;) {
      const existing = await this.accounts.findOne({ _id: directoryUrl })
      if (existing !== null) return existing
      const key = (await (await this.acme()).crypto.createPrivateEcdsaKey('P-256')).toString()
      const fresh = { _id: directoryUrl, sealedKey: this.deps.secrets.seal(key, accountContext(directoryUrl)), email: this.deps.acme.email, accountUrl: null, createdAt: this.deps.clock.now() }
      try {
        await this.accounts.insertOne(fresh)
        return fresh
      } catch (error) {
        // Another node created it first: theirs is the account.
        if (!(error instanceof DuplicateKeyError)) throw error
      }
    }
  }

  private async load (host: string): Promise<void> {
    const record = await this.certificates.findOne({ _id: host })
    this.served.set(host, record === null ? null : this.opened(record))
  }

  private opened (record: CertificateRecord): { key: string, cert: string } | null {
    if (record.chain === null || record.sealedKey === null) return null
    return { key: this.deps.secrets.open(record.sealedKey, keyContext(record.hostname)), cert: record.chain }
  }
}
