import type { Clock } from '../platform/clock.js'
import type { Cursors } from '../collections/query.js'
import type { Records } from '../collections/records.js'
import type { IdGenerator } from '../platform/ids.js'
import type { AddressGuard } from '../outbound/internal-addresses.js'
import { isoString, isoStringOrNull } from '../platform/iso-dates.js'
import { DeferJobError } from '../jobs/job.js'
import { outboundRequest } from '../outbound/http.js'
import { DuplicateKeyError } from '../store/errors.js'
import type { PagedWrites, Store, StoreCollection } from '../store/types.js'
import { keysetPage, NEWEST_FIRST, type Page, type PageRequest } from '../webhooks/paging.js'
import { signatureHeader } from '../webhooks/signing.js'
import { apiAction, type CollectionAction, type HttpAction, type ScheduleRecord, type Schedules, type SlotPayload } from './schedules.js'

/**
 * Runs a schedule's action, once per slot, and keeps the run history. A run
 * is keyed by its slot (`slotKey`, a unique index): whichever node's job
 * gets there first runs it, any other finds it taken.
 */

export type RunStatus = 'running' | 'succeeded' | 'failed' | 'skipped'
export type RunTrigger = 'slot' | 'catch-up' | 'missed' | 'manual'

export type RunRecord = {
  _id: string
  projectId: string
  scheduleId: string
  slotKey: string
  slot: Date
  trigger: RunTrigger
  status: RunStatus
  startedAt: Date
  /** A running run past this was abandoned (its process stopped): it no longer counts as going. */
  deadline: Date
  finishedAt: Date | null
  durationMs: number | null
  output: string | null
  error: string | null
}

export const RUN_OUTPUT_MAX = 1_000
const RESPONSE_MAX_BYTES = 64 * 1024
/** While the previous run goes, a queued slot looks again this often. */
const QUEUE_RETRY_MS = 1_000

export interface ScheduleRunsDeps {
  store: Store
  clock: Clock
  newId: IdGenerator
  guard: AddressGuard
  cursors: Cursors
  schedules: Schedules
  records: Pick<Records, 'bulkDelete' | 'bulkUpdate'>
  /** What `userId` holds in the project now; null when they are gone or no longer in it. */
  permissionsOf: (projectId: string, userId: string) => Promise<ReadonlySet<string> | null>
}

class RunFailure extends Error {}

const RUNS = 'auxiliary_schedule_runs'

export class ScheduleRuns {
  readonly runs: StoreCollection<RunRecord>
  /** A schedule's history goes page by page: a minutely schedule outgrows one write's bound in a week. */
  private readonly sweep: PagedWrites

  constructor (private readonly deps: ScheduleRunsDeps) {
    this.runs = deps.store.collection<RunRecord>(RUNS)
    this.sweep = deps.store.extensions.sweep(RUNS)
  }

  async init (): Promise<void> {
    await this.runs.createIndex({ slotKey: 1 }, { unique: true })
    await this.runs.createIndex({ scheduleId: 1, _id: 1 })
    await this.runs.createIndex({ scheduleId: 1, status: 1 })
  }

  view (run: RunRecord) {
    return {
      id: run._id,
      scheduleId: run.scheduleId,
      slot: isoString(run.slot),
      trigger: run.trigger,
      status: run.status,
      startedAt: isoString(run.startedAt),
      finishedAt: isoStringOrNull(run.finishedAt),
      durationMs: run.durationMs,
      output: run.output,
      error: run.error
    }
  }

  async list (scheduleId: string, page: PageRequest): Promise<Page<RunRecord>> {
    const { docs, nextCursor } = await keysetPage(this.runs, { scheduleId }, NEWEST_FIRST, page, this.deps.cursors, 'auxiliary-schedule-runs')
    return { items: docs, nextCursor }
  }

  async find (scheduleId: string, runId: string): Promise<RunRecord | null> {
    return await this.runs.findOne({ _id: runId, scheduleId })
  }

  async purgeSchedule (scheduleId: string): Promise<void> {
    await this.sweep.deleteMany({ scheduleId })
  }

  async purgeProject (projectId: string): Promise<void> {
    await this.sweep.deleteMany({ projectId })
  }

  /** The slot job's handler: the slot's run, unless it ran already or the schedule is gone or off. */
  async runSlot (payload: SlotPayload): Promise<RunRecord | null> {
    const schedule = await this.deps.schedules.findById(String(payload.scheduleId))
    if (schedule === null || !schedule.enabled) return null
    const slot = new Date(String(payload.slot))
    const slotKey = `${schedule._id}:${slot.toISOString()}`
    if (await this.runs.findOne({ slotKey }) !== null) return null
    if (payload.trigger === 'missed') return await this.skipped(schedule, slot, 'missed', slotKey, 'missed while no server was up; the schedule\'s catch-up is skip')
    return await this.run(schedule, slot, payload.trigger, slotKey)
  }

  /** Run now: the action at once, as a slot of its own; the overlap policy applies as to any slot. */
  async runNow (schedule: ScheduleRecord): Promise<RunRecord> {
    const now = this.deps.clock.now()
    const run = await this.run(schedule, now, 'manual', `${schedule._id}:manual:${this.deps.newId()}`)
    if (run === null) throw new Error('a manual run has a key of its own')
    return run
  }

  private async run (schedule: ScheduleRecord, slot: Date, trigger: RunTrigger, slotKey: string): Promise<RunRecord | null> {
    if (await this.stillGoing(schedule)) {
      if (schedule.overlap === 'queue' && trigger !== 'manual') throw new DeferJobError('the previous run still goes', QUEUE_RETRY_MS)
      return await this.skipped(schedule, slot, trigger, slotKey, 'the previous run was still going (overlap: skip)')
    }
    const startedAt = this.deps.clock.now()
    const run: RunRecord = {
      _id: this.deps.newId(),
      projectId: schedule.projectId,
      scheduleId: schedule._id,
      slotKey,
      slot,
      trigger,
      status: 'running',
      startedAt,
      deadline: new Date(startedAt.getTime() + schedule.timeoutSeconds * 1000 + 60_000),
      finishedAt: null,
      durationMs: null,
      output: null,
      error: null
    }
    if (!await this.claim(run)) return null
    let outcome: { status: RunStatus, output: string | null, error: string | null }
    try {
      const output = await this.perform(schedule, run)
      outcome = { status: 'succeeded', output: excerpt(output), error: null }
    } catch (error) {
      outcome = { status: 'failed', output: error instanceof HttpFailure ? excerpt(error.output) : null, error: excerpt((error as Error).message) }
    }
    const finishedAt = this.deps.clock.now()
    const finished = { ...outcome, finishedAt, durationMs: finishedAt.getTime() - startedAt.getTime() }
    await this.runs.updateOne({ _id: run._id }, { $set: finished })
    return { ...run, ...finished }
  }

  /** Whether a run of the schedule is going; one past its deadline was abandoned and is closed as failed. */
  private async stillGoing (schedule: ScheduleRecord): Promise<boolean> {
    const now = this.deps.clock.now()
    await this.runs.updateMany({ scheduleId: schedule._id, status: 'running', deadline: { $lte: now } }, { $set: { status: 'failed', error: 'abandoned: the process running it stopped', finishedAt: now } })
    return await this.runs.findOne({ scheduleId: schedule._id, status: 'running' }) !== null
  }

  private async skipped (schedule: ScheduleRecord, slot: Date, trigger: RunTrigger, slotKey: string, why: string): Promise<RunRecord | null> {
    const now = this.deps.clock.now()
    const run: RunRecord = {
      _id: this.deps.newId(), projectId: schedule.projectId, scheduleId: schedule._id, slotKey, slot, trigger, status: 'skipped', startedAt: now, deadline: now, finishedAt: now, durationMs: 0, output: null, error: why
    }
    return await this.claim(run) ? run : null
  }

  /** Takes the slot: false when another node's run holds it already. */
  private async claim (run: RunRecord): Promise<boolean> {
    try {
      await this.runs.insertOne(run)
      return true
    } catch (error) {
      if (error instanceof DuplicateKeyError) return false
      throw error
    }
  }

  private async perform (schedule: ScheduleRecord, run: RunRecord): Promise<string> {
    const action = apiAction(schedule.action)
    if (action.type === 'http') return await this.call(schedule, action, run)
    const held = await this.deps.permissionsOf(schedule.projectId, schedule.runAs)
    if (held === null) throw new RunFailure('the user the schedule acts as is gone or no longer in the project')
    for (const permission of schedule.permissions) {
      if (!held.has(permission)) throw new RunFailure(`the user the schedule acts as no longer holds ${permission} in the project`)
    }
    return await withTimeout(this.operate(schedule, action, run), schedule.timeoutSeconds * 1000)
  }

  private async operate (schedule: ScheduleRecord, action: CollectionAction, run: RunRecord): Promise<string> {
    const caller = { kind: 'admin' as const, userId: schedule.runAs, canRead: true, canWrite: schedule.permissions.includes('records.write') }
    const parts: unknown[] = []
    if (Object.keys(action.filter).length > 0) parts.push(action.filter)
    if (action.olderThanDays !== null) parts.push({ createdAt: { $lt: new Date(run.slot.getTime() - action.olderThanDays * 86_400_000).toISOString() } })
    const filter = parts.length === 1 ? parts[0] : { $and: parts }
    if (action.operation === 'delete') {
      const result = await this.deps.records.bulkDelete(schedule.projectId, action.collection, caller, { filter })
      return `deleted ${result.deleted} of ${result.matched} matching records`
    }
    const result = await this.deps.records.bulkUpdate(schedule.projectId, action.collection, caller, { filter, set: action.set ?? {} })
    return `updated ${result.modified} of ${result.matched} matching records`
  }

  private async call (schedule: ScheduleRecord, action: HttpAction, run: RunRecord): Promise<string> {
    const slot = run.slot.toISOString()
    const body = action.body === null ? undefined : action.body.replace(/\{\{\s*(slot|scheduleId|runId)\s*\}\}/g, (_, name: string) => name === 'slot' ? slot : name === 'scheduleId' ? schedule._id : run._id)
    const timestamp = Math.floor(this.deps.clock.nowMs() / 1000)
    const supplied = Object.fromEntries(Object.entries(action.headers).map(([name, value]) => [name.toLowerCase(), value]))
    const headers: Record<string, string> = {
      'user-agent': 'Plinth-Schedules/1',
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...supplied,
      'plinth-signature': signatureHeader(this.deps.schedules.openSecrets(schedule), timestamp, body ?? ''),
      'plinth-schedule-id': schedule._id,
      'plinth-schedule-slot': slot,
      'plinth-run-id': run._id
    }
    const result = await outboundRequest(this.deps.guard, { method: action.method, url: action.url, headers, ...(body === undefined ? {} : { body }) }, { timeoutMs: schedule.timeoutSeconds * 1000, maxResponseBytes: RESPONSE_MAX_BYTES })
    if (result.kind !== 'answered') throw new RunFailure(result.reason)
    const output = `HTTP ${result.status}${result.body.length > 0 ? `: ${result.body.toString('utf8')}` : ''}`
    if (result.status < 200 || result.status >= 300) throw new HttpFailure(`the receiver answered ${result.status}`, output)
    return output
  }
}

class HttpFailure extends RunFailure {
  constructor (message: string, readonly output: string) { super(message) }
}

function excerpt (text: string): string {
  return text.length > RUN_OUTPUT_MAX ? `${text.slice(0, RUN_OUTPUT_MAX)}…` : text
}

async function withTimeout<T> (work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const expired = new Promise<never>((_resolve, reject) => { timer = setTimeout(() => { reject(new RunFailure(`did not finish within ${ms / 1000} s`)) }, ms) })
  try {
    return await Promise.race([work, expired])
  } finally {
    clearTimeout(timer)
  }
}
