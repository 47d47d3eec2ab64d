import { randomUUID } from 'node:crypto'
import type { Clock } from '../platform/clock.js'
import { PROJECT_USERS_TABLE } from '../projects/naming.js'
import type { Document, Store } from '../store/types.js'
import type { WebhookEventInput } from '../webhooks/source.js'
import type { RealtimeConfig } from './config.js'
import { RealtimeHub } from './hub.js'
import { ConnectionLeases } from './leases.js'
import { RealtimeLog, type LogInput, type RecordEventType } from './log.js'
import type { FindCollection } from './subscriptions.js'

export { RealtimeHub, tokenExpiryMs, type StreamEvent, type StreamSink } from './hub.js'
export { parseSubscriptionList } from './subscriptions.js'
export { REALTIME_LEASES_PRUNE_EVERY_MS, REALTIME_LEASES_PRUNE_JOB } from './leases.js'

/** How long a stream's place under the per-caller limit outlives its process's last renewal (one per heartbeat). */
export const LEASE_HEARTBEATS = 3

export interface RealtimePorts {
  store: Store
  clock: Clock
  /** The Store's time: every process judges a lease's lapse alike. */
  storeClock: Clock
  findCollection: FindCollection
  config: RealtimeConfig
  /** Makes the project's record writes go through the change feed, and into the realtime log, from now on (the feed's `armRealtime`). */
  arm: (projectId: string) => Promise<void>
  /** Whether a stream was ever opened on the project (the feed's `armedForRealtime`): only then may a stream on any process follow it. */
  armed: (projectId: string) => Promise<boolean>
}

export interface RealtimeServices {
  log: RealtimeLog
  hub: RealtimeHub
  leases: ConnectionLeases
  /** What the record change feed publishes: logged for every process, then sent to this one's streams. */
  published: (projectId: string, events: readonly WebhookEventInput[]) => Promise<void>
  /**
   * End users' sessions ended: their streams here are checked again at once,
   * and one `revoke` entry in the log has every other process do the same.
   * No entry while the project's feed is not armed: no process holds a
   * stream of it, and entries nobody reads would push record events out of
   * the retained window.
   */
  sessionsEnded: (projectId: string, userIds: readonly string[]) => Promise<void>
}

const TYPES: Record<string, RecordEventType> = { 'record.created': 'create', 'record.updated': 'update', 'record.deleted': 'delete' }

/** A feed event as the log keeps it: the stored record the filters and rules are matched against. */
function logInput (event: WebhookEventInput): LogInput | null {
  const type = TYPES[event.type]
  const { collection, record } = (event.matchOn ?? {}) as { collection?: string, record?: Document }
  if (type === undefined || collection === undefined || record === undefined) return null
  return { key: event.key, type, collection, record, at: event.occurredAt }
}

export async function buildRealtimeServices (ports: RealtimePorts): Promise<RealtimeServices> {
  const log = new RealtimeLog(ports.store, { clock: ports.clock, retained: ports.config.retainedEvents })
  await log.init()
  const leases = new ConnectionLeases(ports.store, { clock: ports.storeClock, leaseMs: LEASE_HEARTBEATS * ports.config.heartbeatMs })
  await leases.init()
  const hub = new RealtimeHub({ log, clock: ports.clock, findCollection: ports.findCollection, config: ports.config, leases, arm: ports.arm })
  return {
    log,
    hub,
    leases,
    published: async (projectId, events) => {
      const inputs = events.flatMap((event) => { const input = logInput(event); return input === null ? [] : [input] })
      // A project the feed serves only for its webhooks has no stream to read the log: nothing is appended.
      if (inputs.length > 0 && await ports.armed(projectId) && await log.append(projectId, inputs)) await hub.pump(projectId)
    },
    sessionsEnded: async (projectId, userIds) => {
      await hub.revokeUsers(projectId, userIds)
      if (userIds.length === 0 || !await ports.armed(projectId)) return
      const id = randomUUID()
      await log.append(projectId, [{ key: `revoke:${id}`, type: 'revoke', collection: PROJECT_USERS_TABLE, record: { _id: id, userIds: [...userIds] }, at: new Date(ports.clock.nowMs()) }])
    }
  }
}
