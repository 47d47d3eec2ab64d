import type { DataCaller } from '../collections/access.js'
import { toApiRecord } from '../collections/record-fields.js'
import type { DataCollection } from '../collections/records.js'
import type { Clock } from '../platform/clock.js'
import type { RealtimeConfig } from './config.js'
import { realtimeErrors } from './errors.js'
import type { ConnectionLeases, LeaseHold } from './leases.js'
import type { LoggedEvent, RealtimeLog } from './log.js'
import { checkSubscription, visibleUnder, type FindCollection, type Subscription, type SubscriptionRequest } from './subscriptions.js'

/** One server-sent event: `id` only on record events, which a client resumes from. */
export interface StreamEvent { id?: string, event: string, data: unknown }

/** Where a connection's events go: the route writes them to the response. */
export interface StreamSink {
  send: (event: StreamEvent) => void
  /** Sends the last event and ends the stream. */
  end: (event: StreamEvent) => void
}

export interface ConnectParams {
  projectId: string
  caller: DataCaller
  /** Whom the per-caller limit counts: the user, or the anonymous caller's address. */
  callerKey: string
  subscriptions: SubscriptionRequest[]
  /** The Last-Event-ID the client resumes from, if any. */
  lastEventId: string | undefined
  /** When the credential stops being valid; null for one without an expiry. */
  expiresAtMs: number | null
  /** Resolves the caller again from the same credential; throws when it no longer stands. */
  recheck: () => Promise<DataCaller>
}

export type EndReason = 'expired' | 'revoked' | 'shutdown'

export interface HubDeps {
  log: RealtimeLog
  clock: Clock
  findCollection: FindCollection
  config: RealtimeConfig
  /** The per-caller limit, held across every process on the store. */
  leases: ConnectionLeases
  /** Makes the project's record writes go through the change feed from now on. */
  arm: (projectId: string) => Promise<void>
}

/** One open stream: its subscriptions, its caller and how far it has been sent. */
export class RealtimeConnection {
  sink: StreamSink | null = null
  closed = false
  checkedAtMs: number

  constructor (
    readonly params: ConnectParams,
    readonly subscriptions: Subscription[],
    public caller: DataCaller,
    /** The number of the last event this connection has been sent, or has chosen to skip. */
    public position: number,
    /** Said once the stream starts: what was missed is gone, reload. */
    readonly gap: { lastEventId: string, oldest: number | null } | null,
    /** Its place under the caller's limit. */
    readonly lease: LeaseHold,
    private readonly hub: RealtimeHub
  ) {
    this.checkedAtMs = hub.nowMs()
  }

  /** Starts sending: the ready event, then what was missed, then new events as they come. */
  async start (sink: StreamSink): Promise<void> {
    this.sink = sink
    if (this.gap !== null) {
      sink.send({ event: 'gap', data: { message: `Events after ${this.gap.lastEventId} are no longer kept; reload the data and go on from here`, lastEventId: String(this.position) } })
    }
    sink.send({ event: 'ready', data: { lastEventId: String(this.position), subscriptions: this.subscriptions.length } })
    await this.hub.pump(this.params.projectId)
  }

  /** The client went away, or the server ends the stream. */
  close (): void {
    this.hub.forget(this)
  }

  end (reason: EndReason, message: string): void {
    if (this.closed) return
    this.sink?.end({ event: 'end', data: { reason, message } })
    this.close()
  }
}

/**
 * The realtime hub of one API process: its open streams, by project, fed
 * from the shared event log. Its own process's writes wake it at once
 * (`published`); others' are found by `tick`, which the plugin calls every
 * REALTIME_POLL_MS and which also ends streams whose credential expired or
 * no longer stands. Each event is judged per subscriber with the data API's
 * own rule code: a record its rule hides sends nothing, denied fields never
 * leave.
 */
export class RealtimeHub {
  private readonly byProject = new Map<string, Set<RealtimeConnection>>()
  private readonly pumping = new Map<string, { running: Promise<void>, again: boolean }>()
  private renewedAtMs: number
  /** Leases being given back, and those whose giving back failed: tried again each tick, never renewed meanwhile. */
  private readonly releasing = new Set<Promise<void>>()
  private readonly unreleased = new Set<LeaseHold>()

  constructor (private readonly deps: HubDeps) {
    this.renewedAtMs = deps.clock.nowMs()
  }

  nowMs (): number {
    return this.deps.clock.nowMs()
  }

  /**
   * Checks the subscriptions and the caller's limit and fixes where the
   * stream starts: after Last-Event-ID when the log still holds what came
   * after it, else at the log's head (with a gap to tell). Throws the
   * refusal before anything is streamed.
   */
  async connect (params: ConnectParams): Promise<RealtimeConnection> {
    const { config } = this.deps
    if (params.subscriptions.length > config.maxSubscriptionsPerConnection) throw realtimeErrors.tooManySubscriptions({ limit: config.maxSubscriptionsPerConnection })
    const subscriptions: Subscription[] = []
    for (const request of params.subscriptions) subscriptions.push(await checkSubscription(params.projectId, request, params.caller, this.deps))
    // The store is the only count: connects that overlap, here or on another process, cannot take one slot twice.
    // Given back if the connect fails.
    const lease = await this.deps.leases.acquire(params.callerKey, config.maxConnectionsPerUser)
    if (lease === null) throw realtimeErrors.tooManyConnections({ limit: config.maxConnectionsPerUser })
    let connection: RealtimeConnection
    try {
      // Armed before the head is read: every write acknowledged after this answer is in the log past the head.
      await this.deps.arm(params.projectId)
      const head = await this.deps.log.head(params.projectId)
      // A revoke that landed after the route's auth check and before the head was read is behind the stream's start
      // and it is not yet listed for revokeUsers: asked again now, so only revokes past the head remain, and those it reads.
      const caller = await params.recheck()
      let position = head
      let gap: RealtimeConnection['gap'] = null
      if (params.lastEventId !== undefined) {
        const asked = /^\d{1,15}$/.test(params.lastEventId) ? Number(params.lastEventId) : null
        const oldest = await this.deps.log.oldest(params.projectId)
        const kept = asked !== null && asked <= head && (asked === head || (oldest !== null && asked >= oldest - 1))
        if (kept) position = asked
        else gap = { lastEventId: params.lastEventId, oldest }
      }
      connection = new RealtimeConnection(params, subscriptions, caller, position, gap, lease, this)
    } catch (error) {
      // Given back in the background (retried each tick when the store refuses), so the caller sees the first error.
      this.release(lease)
      throw error
    }
    let connections = this.byProject.get(params.projectId)
    if (connections === undefined) this.byProject.set(params.projectId, connections = new Set())
    connections.add(connection)
    return connection
  }

  forget (connection: RealtimeConnection): void {
    if (connection.closed) return
    connection.closed = true
    const { projectId } = connection.params
    this.release(connection.lease)
    const connections = this.byProject.get(projectId)
    connections?.delete(connection)
    if (connections?.size === 0) this.byProject.delete(projectId)
  }

  /** The stream closed (a sync path): its slot is given back in the background. */
  private release (lease: LeaseHold): void {
    const giving = this.deps.leases.release(lease).then(() => { this.unreleased.delete(lease) }, () => { this.unreleased.add(lease) })
    this.releasing.add(giving)
    void giving.finally(() => { this.releasing.delete(giving) })
  }

  /** Open streams on this process (health, tests). */
  get size (): number {
    let count = 0
    for (const connections of this.byProject.values()) count += connections.size
    return count
  }

  /** Sends the project's streams what the log holds past them; one pump per project at a time, run again if asked meanwhile. */
  async pump (projectId: string): Promise<void> {
    const current = this.pumping.get(projectId)
    if (current !== undefined) {
      current.again = true
      await current.running
      return
    }
    const state = { running: Promise.resolve(), again: true }
    state.running = (async () => {
      try {
        while (state.again) {
          state.again = false
          await this.deliver(projectId)
        }
      } finally {
        this.pumping.delete(projectId)
      }
    })()
    this.pumping.set(projectId, state)
    await state.running
  }

  private async deliver (projectId: string): Promise<void> {
    for (;;) {
      const connections = [...(this.byProject.get(projectId) ?? [])].filter((connection) => connection.sink !== null)
      if (connections.length === 0) return
      const from = Math.min(...connections.map((connection) => connection.position))
      const events = await this.deps.log.after(projectId, from)
      if (events.length === 0) return
      const definitions = new Map<string, DataCollection | null>()
      for (const event of events) {
        const behind = connections.filter((connection) => !connection.closed && event.seq > connection.position)
        for (const connection of behind) connection.position = event.seq
        if (event.type === 'revoke') {
          // Checked before any later event is sent: a stream that outlives its user's sessions sends nothing more.
          // An entry of an older process names one user as its `_id`.
          const userIds = Array.isArray(event.record.userIds) ? event.record.userIds.map(String) : [String(event.record._id)]
          await this.recheckUsers(behind, new Set(userIds))
          continue
        }
        if (!definitions.has(event.collection)) definitions.set(event.collection, await this.deps.findCollection(projectId, event.collection))
        const definition = definitions.get(event.collection) ?? null
        if (definition !== null) for (const connection of behind) if (!connection.closed) this.sendTo(connection, definition, event)
      }
    }
  }

  /**
   * The sessions of these end users ended (deleted, disabled, signed out
   * everywhere): their streams on this process are checked again now, not at
   * the next REALTIME_RECHECK_MS. Other processes learn it from the log's
   * `revoke` event.
   */
  async revokeUsers (projectId: string, userIds: readonly string[]): Promise<void> {
    await this.recheckUsers([...(this.byProject.get(projectId) ?? [])], new Set(userIds))
  }

  private async recheckUsers (connections: readonly RealtimeConnection[], userIds: ReadonlySet<string>): Promise<void> {
    for (const connection of connections) {
      const { caller } = connection
      if (!connection.closed && caller.kind === 'user' && userIds.has(caller.id)) await this.recheck(connection)
    }
  }

  /** Resolves the stream's credential again; one that no longer stands ends the stream. */
  private async recheck (connection: RealtimeConnection): Promise<void> {
    connection.checkedAtMs = this.nowMs()
    try {
      connection.caller = await connection.params.recheck()
    } catch (error) {
      connection.end('revoked', `The credential no longer stands: ${error instanceof Error ? error.message : 'refused'}`)
    }
  }

  /** One event to one stream, as its caller's rules let it see it, naming the subscriptions it matched. */
  private sendTo (connection: RealtimeConnection, definition: DataCollection, event: LoggedEvent): void {
    const matched: number[] = []
    const denied = new Set<string>()
    connection.subscriptions.forEach((subscription, index) => {
      if (subscription.collection !== event.collection) return
      const deny = visibleUnder(subscription, definition, connection.caller, event.record, this.deps.clock)
      if (deny === null) return
      matched.push(index)
      for (const field of deny) denied.add(field)
    })
    if (matched.length === 0) return
    connection.sink?.send({
      id: String(event.seq),
      event: event.type,
      data: { subscriptions: matched, collection: event.collection, record: toApiRecord(event.record, denied), at: event.at.toISOString() }
    })
  }

  /**
   * Called every REALTIME_POLL_MS: renews this process's leases every
   * REALTIME_HEARTBEAT_MS, ends streams whose credential lapsed, then sends
   * what other processes logged.
   */
  async tick (): Promise<void> {
    const now = this.nowMs()
    for (const lease of [...this.unreleased]) this.release(lease)
    await Promise.all(this.releasing)
    if (now - this.renewedAtMs >= this.deps.config.heartbeatMs) {
      this.renewedAtMs = now
      await this.deps.leases.renew()
    }
    for (const connections of [...this.byProject.values()]) {
      for (const connection of [...connections]) {
        if (connection.sink === null) continue
        const { expiresAtMs } = connection.params
        if (expiresAtMs !== null && now >= expiresAtMs) {
          connection.end('expired', 'The credential has expired; sign in again and reconnect with Last-Event-ID')
          continue
        }
        if (now - connection.checkedAtMs < this.deps.config.recheckMs) continue
        await this.recheck(connection)
      }
    }
    for (const projectId of [...this.byProject.keys()]) await this.pump(projectId)
  }

  /** Ends every stream (the server is closing), so none holds the close up, and gives their slots back. */
  async shutdown (): Promise<void> {
    for (const connections of [...this.byProject.values()]) {
      for (const connection of [...connections]) connection.end('shutdown', 'The server is restarting; reconnect with Last-Event-ID')
    }
    await this.settled()
  }

  /** Resolves once the slots of streams closed so far are given back (or failed to be, and wait for the next tick). */
  async settled (): Promise<void> {
    while (this.releasing.size > 0) await Promise.all(this.releasing)
  }
}

/** When a JWT-shaped credential expires (its `exp`), read after the credential was verified; null for one without. */
export function tokenExpiryMs (token: string | null): number | null {
  if (token === null) return null
  const parts = token.split('.')
  if (parts.length !== 3) return null
  try {
    const claims = JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8')) as { exp?: unknown }
    return typeof claims.exp === 'number' ? claims.exp * 1000 : null
  } catch {
    return null
  }
}
