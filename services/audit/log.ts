import type { Clock } from '../platform/clock.js'
import type { Filter, PagedWrites, Store, StoreCollection } from '../store/types.js'
import type { Cursors } from '../collections/query.js'
import { keysetPage, NEWEST_FIRST, type Page, type PageRequest } from '../webhooks/paging.js'

export const AUDIT_PRUNE_JOB = 'audit.prune'

/** How the actor proved who they are: a platform session, a personal access token, or (signing in) a password or an SSO ticket. */
export type AuditCredential = 'session' | 'pat' | 'password' | 'sso'

/**
 * One change, as the audit log keeps it. It holds names, never values: the
 * fields a request set are listed by name, so no password, token or secret
 * value can end up here.
 */
// A type, not an interface: the store's Document asks for an index signature, which only type aliases carry implicitly.
export type AuditEntry = {
  _id: string
  at: Date
  /** The organization the change lies in; null for a change to the actor's own account (sign-in, PATs, SSH keys). */
  orgId: string | null
  projectId: string | null
  actorId: string
  credential: AuditCredential
  /** The caller's address, as the server's trusted proxies let it see it. */
  address: string
  /** The route's operation (`createPersonalAccessToken`), or its method and template. */
  action: string
  method: string
  route: string
  /** The innermost thing changed: the route's last path parameter, or the id the answer created. */
  targetId: string | null
  /** The path parameters (ids and names, as the route's template names them). */
  params: Record<string, string>
  /** The names of the fields the request set, never their values. */
  fields: string[]
  status: number
}

export type NewAuditEntry = Omit<AuditEntry, '_id' | 'at'>

export interface AuditFilter {
  actorId?: string
  action?: string
  targetId?: string
  since?: Date
  until?: Date
}

export interface AuditLogDeps {
  clock: Clock
  newId: () => string
  cursors: Cursors
}

/** The append-only record of who changed what (docs/audit.md). */
export class AuditLog {
  private readonly entries: StoreCollection<AuditEntry>
  /** Pruning pages its deletes: a busy day leaves more entries than one write may remove. */
  private readonly sweep: PagedWrites

  constructor (store: Store, private readonly deps: AuditLogDeps) {
    this.entries = store.collection<AuditEntry>('audit_log')
    this.sweep = store.extensions.sweep('audit_log')
  }

  async init (): Promise<void> {
    await this.entries.createIndex({ orgId: 1, _id: -1 })
    await this.entries.createIndex({ actorId: 1, _id: -1 })
    await this.entries.createIndex({ at: 1 })
  }

  async append (entry: NewAuditEntry): Promise<AuditEntry> {
    const stored: AuditEntry = { _id: this.deps.newId(), at: this.deps.clock.now(), ...entry }
    await this.entries.insertOne(stored)
    return stored
  }

  /**
   * An organization's entries, newest first: those made in it, and the
   * account changes (sign-ins, PATs, SSH keys) of `members`, its members now.
   */
  async list (orgId: string, members: readonly string[], filter: AuditFilter, page: PageRequest): Promise<Page<AuditEntry>> {
    const where: Filter[] = [{ $or: [{ orgId }, { orgId: null, actorId: { $in: [...members] } }] }]
    if (filter.actorId !== undefined) where.push({ actorId: filter.actorId })
    if (filter.action !== undefined) where.push({ action: filter.action })
    if (filter.targetId !== undefined) where.push({ targetId: filter.targetId })
    if (filter.since !== undefined) where.push({ at: { $gte: filter.since } })
    if (filter.until !== undefined) where.push({ at: { $lt: filter.until } })
    const { docs, nextCursor } = await keysetPage(this.entries, { $and: where }, NEWEST_FIRST, page, this.deps.cursors, `audit-log:${orgId}`)
    return { items: docs, nextCursor }
  }

  /** Deletes entries older than the retention; answers how many went. */
  async prune (retentionDays: number): Promise<number> {
    const before = new Date(this.deps.clock.now().getTime() - retentionDays * 24 * 60 * 60_000)
    return await this.sweep.deleteMany({ at: { $lt: before } })
  }
}
