import { EventEmitter } from 'node:events'
import {
  ASSISTANT_LIMITS, type AssistantRunT, type PageQueryT, type PendingApprovalT, type RunEventT, type RunEventType, type RunStatus, type RunUsageT, type StopReason
} from '../../schemas/assistant.js'
import type { Cursors } from '../collections/query.js'
import type { Clock } from '../platform/clock.js'
import { isoString, isoStringOrNull } from '../platform/iso-dates.js'
import type { PagedWrites, Store, StoreCollection } from '../store/types.js'
import { keysetPage, NEWEST_FIRST, type Page } from '../webhooks/paging.js'

export const ACTIVE_STATUSES: readonly RunStatus[] = ['queued', 'running', 'awaiting_approval']
/** Events after which nothing more comes until someone acts: a follower stops there. */
export const PAUSING_EVENTS: ReadonlySet<RunEventType> = new Set(['approval.required', 'run.completed', 'run.failed', 'run.cancelled'])
/** The statuses those events announce: a move to one takes its event's id in the same write (see `transition`). */
const PAUSED_STATUSES: ReadonlySet<RunStatus> = new Set(['awaiting_approval', 'completed', 'failed', 'cancelled'])
/**
 * How long a follower of a paused run waits for the event its move took the
 * id of. The event is written just after the move (a session release may
 * come between, each write waiting at most the store's busy timeout); a
 * longer wait means the writer died, and the stream ends without it.
 */
const ANNOUNCE_GRACE_MS = 30_000
/** How long an answer that does not stream waits for that event (a client reading again gets it later). */
const ANNOUNCE_WAIT_MS = 5_000

/** The credential and address of the request that started a run. */
export interface RunOrigin { credential: 'session' | 'pat', address: string }

export type RunRecord = {
  _id: string
  sessionId: string
  projectId: string
  organizationId: string
  status: RunStatus
  model: string
  stopReason: StopReason | null
  error: string | null
  usage: RunUsageT
  approvals: PendingApprovalT[]
  /** Who posted the message: the tools run as them, with their access read at each call. */
  createdBy: string
  /** A scoped PAT's scopes, kept for the tool calls. */
  scopes: string[] | null
  /** How the message that started the run was sent (absent on runs from before it was kept). */
  origin?: RunOrigin
  /** The last event's id. */
  eventCount: number
  createdAt: Date
  updatedAt: Date
  finishedAt: Date | null
}

type EventRecord = {
  _id: string
  runId: string
  seq: number
  type: RunEventType
  data: unknown
  at: Date
}

export function runView (record: RunRecord): AssistantRunT {
  return {
    id: record._id,
    sessionId: record.sessionId,
    status: record.status,
    model: record.model,
    stopReason: record.stopReason,
    error: record.error,
    usage: record.usage,
    approvals: record.approvals,
    createdBy: record.createdBy,
    createdAt: isoString(record.createdAt),
    updatedAt: isoString(record.updatedAt),
    finishedAt: isoStringOrNull(record.finishedAt)
  }
}

const eventView = (record: EventRecord): RunEventT => ({ id: record.seq, type: record.type, data: record.data, at: isoString(record.at) })

/**
 * Runs and their events. Every change of status is a write conditional on
 * the status it leaves, so a cancel and the run's own end never both win.
 * Events are numbered from the run's counter in one write and kept, so a
 * client that lost its stream reads what it missed (`Last-Event-ID`).
 */
export class AssistantRuns {
  private readonly runs: StoreCollection<RunRecord>
  private readonly events: StoreCollection<EventRecord>
  /** Deleting sessions removes their runs' events page by page: a long run alone holds thousands. */
  private readonly sweepEvents: PagedWrites
  private readonly sweepRuns: PagedWrites
  // Wakes this node's followers at once; followers on other nodes find new events at their next poll.
  private readonly appended = new EventEmitter().setMaxListeners(0)

  constructor (store: Store, private readonly deps: { clock: Clock, cursors: Cursors, pollMs?: number }) {
    this.runs = store.collection<RunRecord>('assistant_runs')
    this.events = store.collection<EventRecord>('assistant_run_events')
    this.sweepEvents = store.extensions.sweep('assistant_run_events')
    this.sweepRuns = store.extensions.sweep('assistant_runs')
  }

  async init (): Promise<void> {
    await this.runs.createIndex({ sessionId: 1, _id: 1 })
    await this.events.createIndex({ runId: 1, seq: 1 }, { unique: true })
  }

  async insert (record: RunRecord): Promise<void> {
    await this.runs.insertOne(record)
  }

  async find (sessionId: string, runId: string): Promise<RunRecord | null> {
    return await this.runs.findOne({ _id: runId, sessionId })
  }

  async byId (runId: string): Promise<RunRecord | null> {
    return await this.runs.findOne({ _id: runId })
  }

  async list (sessionId: string, page: PageQueryT): Promise<Page<RunRecord>> {
    const { docs, nextCursor } = await keysetPage(this.runs, { sessionId }, NEWEST_FIRST, page, this.deps.cursors, 'assistant-runs')
    return { items: docs, nextCursor }
  }

  /**
   * Moves a run from one of `from` to `to` with `changes`; null when it was
   * in none of them (someone else moved it first). A move to a status a
   * follower stops at also takes, in the same write, the id of the event that
   * announces it, which the mover then writes with `announce`: a follower
   * reading the new status knows that event is still to come, even when the
   * mover has not written it yet. `announced` asks the same of another move
   * (a run's start, announcing `run.started`): one write fewer than `emit`.
   */
  async transition (runId: string, from: readonly RunStatus[], to: RunStatus, changes: Partial<RunRecord> = {}, announced = PAUSED_STATUSES.has(to)): Promise<RunRecord | null> {
    const now = this.deps.clock.now()
    const finished = to === 'completed' || to === 'failed' || to === 'cancelled'
    return await this.runs.findOneAndUpdate(
      { _id: runId, status: { $in: [...from] } },
      {
        $set: { ...changes, status: to, updatedAt: now, ...(finished ? { finishedAt: now } : {}) },
        ...(announced ? { $inc: { eventCount: 1 } } : {})
      },
      { returnDocument: 'after' }
    )
  }

  async update (runId: string, status: RunStatus, changes: Partial<RunRecord>): Promise<RunRecord | null> {
    return await this.runs.findOneAndUpdate({ _id: runId, status }, { $set: { ...changes, updatedAt: this.deps.clock.now() } }, { returnDocument: 'after' })
  }

  async addUsage (runId: string, usage: RunUsageT): Promise<void> {
    await this.runs.updateOne({ _id: runId }, { $inc: { 'usage.inputTokens': usage.inputTokens, 'usage.outputTokens': usage.outputTokens, 'usage.steps': usage.steps } })
  }

  /** Records an event under the run's next id and wakes this node's followers. */
  async emit (runId: string, type: RunEventType, data: unknown): Promise<RunEventT> {
    const run = await this.runs.findOneAndUpdate({ _id: runId }, { $inc: { eventCount: 1 } }, { returnDocument: 'after', projection: { eventCount: 1 } })
    if (run === null) throw new Error(`run ${runId} is gone`)
    return await this.record(runId, run.eventCount, type, data)
  }

  /** Records the event announcing the move `transition` answered `moved` for, under the id that move took. */
  async announce (moved: RunRecord, type: RunEventType, data: unknown): Promise<RunEventT> {
    return await this.record(moved._id, moved.eventCount, type, data)
  }

  private async record (runId: string, seq: number, type: RunEventType, data: unknown): Promise<RunEventT> {
    const record: EventRecord = { _id: `${runId}-${String(seq).padStart(8, '0')}`, runId, seq, type, data, at: this.deps.clock.now() }
    await this.events.insertOne(record)
    const event = eventView(record)
    this.appended.emit(runId, event)
    return event
  }

  async eventsAfter (runId: string, after: number): Promise<RunEventT[]> {
    const found = await this.events.find({ runId, seq: { $gt: after } }, { sort: { seq: 1 }, limit: ASSISTANT_LIMITS.eventPage }).toArray()
    return found.map(eventView)
  }

  /**
   * The events recorded after `after`, for an answer that does not stream.
   * The move that paused or ended `run` took the id of the event announcing
   * it before the event was written (see `transition`): that event is waited
   * for as a follower waits, so a client that has read the run's end reads
   * the event saying so too.
   */
  async eventsSoFar (run: RunRecord, after: number): Promise<RunEventT[]> {
    const events = await this.eventsAfter(run._id, after)
    const expected = Math.min(run.eventCount, after + ASSISTANT_LIMITS.eventPage)
    const last = events.at(-1)?.id ?? after
    if (!PAUSED_STATUSES.has(run.status) || last >= expected) return events
    for await (const event of this.follow(run._id, last, AbortSignal.timeout(ANNOUNCE_WAIT_MS))) {
      events.push(event)
      if (event.id >= expected) break
    }
    return events
  }

  /**
   * The run's events after `after`, as they come, until one after which the
   * run waits (an approval, its end) or `signal` aborts (the client left).
   * An event written on this node comes with its wake-up, once stored, and is
   * sent from there in id order without being read back. The store is read
   * for the rest: at the start, at each poll (what another node wrote) and
   * at a gap in what this node heard (an id taken elsewhere).
   */
  async * follow (runId: string, after: number, signal: AbortSignal): AsyncGenerator<RunEventT> {
    let last = after
    // When the follower first met an id that was taken but not yet written (`emit` numbers, then writes; two writers
    // may overlap): it waits there, in order, rather than send the next one and skip that id for good.
    let gapSince: number | null = null
    const heard = new Map<number, RunEventT>()
    // Set when an event is heard: one heard during a read means no wait after it.
    let woken = false
    let wake = (): void => {}
    // Listening before the first read: an event stored after a read is heard, never missed.
    const hear = (event: RunEventT): void => {
      if (event.id > last) heard.set(event.id, event)
      woken = true
      wake()
    }
    this.appended.on(runId, hear)
    let poll = true
    try {
      while (!signal.aborted) {
        const next = heard.get(last + 1)
        if (next !== undefined) {
          heard.delete(next.id)
          gapSince = null
          last = next.id
          yield next
          if (PAUSING_EVENTS.has(next.type)) return
          continue
        }
        woken = false
        if (poll || heard.size > 0) {
          const batch = await this.eventsAfter(runId, last)
          let sent = 0
          for (const event of batch) {
            if (event.id <= last) continue
            if (event.id !== last + 1) {
              const now = this.deps.clock.nowMs()
              gapSince ??= now
              // A writer that died with its id taken leaves a gap nothing will fill: past the grace it is passed over.
              if (now - gapSince <= ANNOUNCE_GRACE_MS) break
            }
            gapSince = null
            last = event.id
            heard.delete(event.id)
            sent++
            yield event
            if (PAUSING_EVENTS.has(event.type)) return
          }
          if (sent > 0 || heard.has(last + 1)) continue
          // Nothing new (not a wait at a gap, with later events already there): has the run paused or ended?
          if (batch.length === 0 && heard.size === 0) {
            const run = await this.byId(runId)
            if (run === null) return
            // A paused run's last event may still be on its way: its move took the id first (see `transition`).
            if (PAUSED_STATUSES.has(run.status) && (run.eventCount <= last || this.deps.clock.nowMs() - run.updatedAt.getTime() > ANNOUNCE_GRACE_MS)) return
          }
        }
        if (!woken) {
          // A plain timer and callback: this wait comes between every two events, and abort signals cost more than it.
          await new Promise<void>((resolve) => {
            const done = (): void => {
              clearTimeout(timer)
              signal.removeEventListener('abort', done)
              wake = () => {}
              resolve()
            }
            const timer = setTimeout(done, this.deps.pollMs ?? 1000)
            signal.addEventListener('abort', done)
            wake = done
          })
        }
        poll = !woken
      }
    } finally {
      this.appended.off(runId, hear)
    }
  }

  async deleteForSessions (sessionIds: string[]): Promise<void> {
    if (sessionIds.length === 0) return
    const runIds = (await this.runs.find({ sessionId: { $in: sessionIds } }).toArray()).map((run) => run._id)
    if (runIds.length > 0) await this.sweepEvents.deleteMany({ runId: { $in: runIds } })
    await this.sweepRuns.deleteMany({ sessionId: { $in: sessionIds } })
  }
}
