import { isIP } from 'node:net'
import type { Clock } from '../platform/clock.js'
import type { Gateway, GatewayTarget } from '../dns/gateway.js'
import { nameProblem } from '../dns/names.js'
import { hostingErrors } from './errors.js'
import type { IdGenerator } from '../platform/ids.js'
import { isoString } from '../platform/iso-dates.js'
import { DuplicateKeyError } from '../store/errors.js'
import type { Store, StoreCollection, WithId } from '../store/types.js'
import { MAX_HOSTNAMES_PER_APP, type BoundHostnameT, type HostingHostnameT } from '../../schemas/hosting-hostnames.js'
import { HostnameChecks, type HostnameRecordCheck } from './hostname-checks.js'

export type HostingHostname = HostingHostnameT
export type BoundHostname = BoundHostnameT

export type HostingEventKind =
  | 'hostname.bound' | 'hostname.verified' | 'hostname.verification_failed' | 'hostname.unbound'
  | 'certificate.issued' | 'certificate.renewed' | 'certificate.failed'

export interface HostingEventDetails { projectId: string, appId: string, hostname: string, [detail: string]: unknown }

/** Told of every change, for the app's timeline (the orchestration records it). */
export type HostingEventListener = (kind: HostingEventKind, details: HostingEventDetails) => void | Promise<void>

/** A hostname routed to an app: what the gateway's route table is built from. */
export interface VerifiedHostname { hostname: string, projectId: string, appId: string }

type HostnameRecord = {
  projectId: string
  appId: string
  /** Unique across the platform: one name reaches one app. */
  hostname: string
  status: 'pending' | 'verified'
  verifiedAt: Date | null
  lastCheck: { at: Date, ok: boolean, records: HostnameRecordCheck[] } | null
  createdAt: Date
  updatedAt: Date
}

export interface HostnamesDeps {
  clock: Clock
  newId: IdGenerator
  gateway: Pick<Gateway, 'instructions'>
  /** Where hostnames must point (DNS_GATEWAY_HOST, DNS_GATEWAY_IPV4, DNS_GATEWAY_IPV6). */
  target: GatewayTarget
  /** HOSTING_DNS_RESOLVERS; empty asks the system's resolvers. */
  resolvers: string[]
  /** The platform's own names (its nameservers, the gateway, its public host): no app may bind one or a name under one. */
  reservedHosts: string[]
  onEvent?: HostingEventListener
}

const HOSTNAMES = 'hosting_hostnames'
const VERIFY_PENDING_BATCH = 50

/** The recurring job that runs `verifyPending`, and how often: the plugin registers and schedules it. */
export const VERIFY_PENDING_JOB = 'hosting.hostnames.verify'
export const VERIFY_PENDING_EVERY_MS = 5 * 60_000

const hostnameNotFound = () => hostingErrors.hostnameNotFound()

function toView (record: WithId<HostnameRecord>): HostingHostname {
  return {
    id: record._id,
    appId: record.appId,
    hostname: record.hostname,
    status: record.status,
    verifiedAt: record.verifiedAt === null ? null : isoString(record.verifiedAt),
    lastCheck: record.lastCheck === null ? null : { ...record.lastCheck, at: isoString(record.lastCheck.at) },
    createdAt: isoString(record.createdAt),
    updatedAt: isoString(record.updatedAt)
  }
}

/** A host name as bound: lower case, no trailing dot, at least two labels, letters, digits and hyphens only (no IP address). */
export function hostnameOf (input: string, path = 'body.hostname'): string {
  const name = input.trim().toLowerCase().replace(/\.$/, '')
  let problem = nameProblem(name)
  if (problem === null && !name.includes('.')) problem = 'a hostname needs at least two labels, such as app.example.com'
  if (problem === null && name.includes('_')) problem = 'a hostname may not hold "_"'
  if (problem === null && (isIP(name) !== 0 || /^\d+$/.test(name.slice(name.lastIndexOf('.') + 1)))) problem = 'an IP address is not a hostname'
  if (problem !== null) throw hostingErrors.invalidHostname({ input, why: problem, path })
  return name
}

/**
 * Custom hostnames of apps: bound with the DNS records they need, verified
 * against live DNS (the route to the gateway and the project's ownership
 * TXT), then routed and given certificates.
 */
export class Hostnames {
  private readonly hostnames: StoreCollection<HostnameRecord>
  private readonly checks: HostnameChecks
  private readonly releaseHooks: Array<(released: VerifiedHostname) => Promise<void>> = []

  constructor (store: Store, private readonly deps: HostnamesDeps) {
    this.hostnames = store.collection<HostnameRecord>(HOSTNAMES)
    this.checks = new HostnameChecks(deps.target, deps.resolvers)
  }

  async init (): Promise<void> {
    await this.hostnames.createIndex({ hostname: 1 }, { unique: true })
    await this.hostnames.createIndex({ projectId: 1, appId: 1 })
    await this.hostnames.createIndex({ status: 1 })
  }

  /** Runs after a hostname is unbound (its certificate goes with it). */
  onRelease (hook: (released: VerifiedHostname) => Promise<void>): void {
    this.releaseHooks.push(hook)
  }

  async list (projectId: string, appId: string): Promise<HostingHostname[]> {
    return (await this.hostnames.find({ projectId, appId }, { sort: { hostname: 1 } }).toArray()).map(toView)
  }

  async get (projectId: string, appId: string, hostname: string): Promise<HostingHostname> {
    return toView(await this.record(projectId, appId, hostname))
  }

  /** Who holds `hostname`, whatever the project: for services that act on a name (certificates). */
  async holder (hostname: string): Promise<(VerifiedHostname & { status: HostnameRecord['status'] }) | null> {
    const record = await this.hostnames.findOne({ hostname })
    return record === null ? null : { hostname: record.hostname, projectId: record.projectId, appId: record.appId, status: record.status }
  }

  /** Claims the name for the app and answers the records to create; it is routed once `verify` finds them. */
  async bind (projectId: string, appId: string, input: string): Promise<BoundHostname> {
    const hostname = hostnameOf(input)
    this.refuseReserved(hostname)
    if (await this.hostnames.countDocuments({ projectId, appId }) >= MAX_HOSTNAMES_PER_APP) {
      throw hostingErrors.tooManyHostnames({ limit: MAX_HOSTNAMES_PER_APP })
    }
    // Asked before anything is written: an unconfigured gateway refuses here and leaves nothing behind.
    const instructions = await this.deps.gateway.instructions(projectId, hostname)
    const now = this.deps.clock.now()
    const record: WithId<HostnameRecord> = {
      _id: this.deps.newId(), projectId, appId, hostname, status: 'pending', verifiedAt: null, lastCheck: null, createdAt: now, updatedAt: now
    }
    try {
      await this.hostnames.insertOne(record)
    } catch (error) {
      if (!(error instanceof DuplicateKeyError)) throw error
      throw this.taken(await this.hostnames.findOne({ hostname }), hostname, projectId, appId)
    }
    await this.deps.onEvent?.('hostname.bound', { projectId, appId, hostname })
    return { hostname: toView(record), instructions }
  }

  /** The binding with the records it needs, as `bind` answered them (with `present` where one of the project's zones holds the name). */
  async instructions (projectId: string, appId: string, hostname: string): Promise<BoundHostname> {
    const record = await this.record(projectId, appId, hostname)
    return { hostname: toView(record), instructions: await this.deps.gateway.instructions(projectId, record.hostname) }
  }

  /**
   * Looks the records up through a real resolver. All right: the hostname
   * is verified and routed. Otherwise a 409 lists each record that is
   * missing or wrong, and the check is kept for the app's view either way.
   */
  async verify (projectId: string, appId: string, hostname: string): Promise<HostingHostname> {
    const record = await this.record(projectId, appId, hostname)
    const { checked, problems } = await this.check(record)
    if (problems.length > 0) {
      await this.deps.onEvent?.('hostname.verification_failed', { projectId, appId, hostname: record.hostname, problems: problems.map((check) => check.problem) })
      throw hostingErrors.hostnameUnverified({ hostname: record.hostname, problems })
    }
    return toView(checked)
  }

  /**
   * Checks pending hostnames again, the longest-waiting first, so a name
   * whose records appear is verified without anyone asking; what a
   * recurring job runs. Failures are only kept in `lastCheck`: the timeline
   * hears of the verification, not of every miss before it.
   */
  async verifyPending (): Promise<{ verified: string[], pending: string[] }> {
    const due = await this.hostnames.find({ status: 'pending' }, { sort: { updatedAt: 1 }, limit: VERIFY_PENDING_BATCH }).toArray()
    const verified: string[] = []
    const pending: string[] = []
    for (const record of due) {
      const { problems } = await this.check(record)
      if (problems.length === 0) verified.push(record.hostname)
      else pending.push(record.hostname)
    }
    return { verified, pending }
  }

  /** Looks the records up and keeps what was found; the first success verifies the name and is announced. */
  private async check (record: WithId<HostnameRecord>): Promise<{ checked: WithId<HostnameRecord>, problems: HostnameRecordCheck[] }> {
    const instructions = await this.deps.gateway.instructions(record.projectId, record.hostname)
    const records = await this.checks.check(instructions)
    const now = this.deps.clock.now()
    const problems = records.filter((check) => !check.ok)
    const lastCheck = { at: now, ok: problems.length === 0, records }
    const set: Partial<HostnameRecord> = lastCheck.ok ? { status: 'verified', verifiedAt: record.verifiedAt ?? now, lastCheck, updatedAt: now } : { lastCheck, updatedAt: now }
    await this.hostnames.updateOne({ _id: record._id }, { $set: set })
    if (lastCheck.ok && record.status !== 'verified') {
      await this.deps.onEvent?.('hostname.verified', { projectId: record.projectId, appId: record.appId, hostname: record.hostname, found: records.flatMap((check) => check.found) })
    }
    return { checked: { ...record, ...set }, problems }
  }

  /** Unbinds the hostname; answers it as bound (lower case, no trailing dot). */
  async unbind (projectId: string, appId: string, hostname: string): Promise<string> {
    const record = await this.hostnames.findOneAndDelete({ projectId, appId, hostname: hostnameOf(hostname, 'params.hostname') })
    if (record === null) throw hostnameNotFound()
    await this.released(record)
    return record.hostname
  }

  /** The app's hostnames go with it. */
  async deleteAllForApp (projectId: string, appId: string): Promise<void> {
    for (const record of await this.hostnames.find({ projectId, appId }).toArray()) {
      if ((await this.hostnames.deleteOne({ _id: record._id })).deletedCount === 1) await this.released(record)
    }
  }

  async deleteAllForProject (projectId: string): Promise<void> {
    for (const record of await this.hostnames.find({ projectId }).toArray()) {
      if ((await this.hostnames.deleteOne({ _id: record._id })).deletedCount === 1) await this.released(record)
    }
  }

  /** Every verified hostname on the platform, for the gateway's route table. */
  async verifiedRoutes (): Promise<VerifiedHostname[]> {
    const records = await this.hostnames.find({ status: 'verified' }, { sort: { hostname: 1 } }).toArray()
    return records.map((record) => ({ hostname: record.hostname, projectId: record.projectId, appId: record.appId }))
  }

  private async released (record: WithId<HostnameRecord>): Promise<void> {
    const released = { hostname: record.hostname, projectId: record.projectId, appId: record.appId }
    for (const hook of this.releaseHooks) await hook(released)
    await this.deps.onEvent?.('hostname.unbound', released)
  }

  private taken (holder: HostnameRecord | null, hostname: string, projectId: string, appId: string): Error {
    if (holder?.projectId === projectId && holder.appId === appId) return hostingErrors.hostnameBound({ hostname })
    // Which project holds it is not this caller's business.
    return hostingErrors.hostnameTaken({ hostname })
  }

  private refuseReserved (hostname: string): void {
    const reserved = this.deps.reservedHosts.find((host) => hostname === host || hostname.endsWith(`.${host}`))
    if (reserved !== undefined) throw hostingErrors.hostnameReserved({ hostname, reserved })
  }

  private async record (projectId: string, appId: string, hostname: string): Promise<WithId<HostnameRecord>> {
    const record = await this.hostnames.findOne({ projectId, appId, hostname: hostnameOf(hostname, 'params.hostname') })
    if (record === null) throw hostnameNotFound()
    return record
  }
}
