import type { Clock } from '../platform/clock.js'
import type { Cursors } from '../collections/query.js'
import { generateToken, type SecretBox } from '../platform/crypto.js'
import type { IdGenerator } from '../platform/ids.js'
import type { AddressGuard } from '../outbound/internal-addresses.js'
import { isoString } from '../platform/iso-dates.js'
import type { JobQueue } from '../jobs/queue.js'
import type { StoreCollection } from '../store/types.js'
import type { Store } from '../store/types.js'
import { keysetPage, OLDEST_FIRST, type Page, type PageRequest } from '../webhooks/paging.js'
import { auxiliaryErrors } from './errors.js'
import { checkTrigger, nextFire, nextFires, type Trigger } from './schedule-times.js'
import { sealedAt, type SealedValues } from '../platform/reseal.js'

const AUXILIARY_SCHEDULES = 'auxiliary_schedules'

/**
 * Schedules (docs/auxiliary.md, "Schedules"): what fires when, what it does,
 * and as whom. This file holds the schedules themselves and the tick that
 * turns due slots into jobs of the durable queue; schedule-runs.ts runs them.
 */

export type OverlapPolicy = 'skip' | 'queue'
export type CatchUpPolicy = 'once' | 'skip'

export type HttpAction = {
  type: 'http'
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'
  url: string
  headers: Record<string, string>
  /** `{{slot}}`, `{{scheduleId}}` and `{{runId}}` are replaced when it runs. */
  body: string | null
}

export type CollectionAction = {
  type: 'collection'
  collection: string
  operation: 'delete' | 'update'
  /** A Store filter in the data API's syntax. */
  filter: Record<string, unknown>
  /** Only records created more than this many days before the slot. */
  olderThanDays: number | null
  /** The fields an update sets. */
  set: Record<string, unknown> | null
}

export type ScheduleAction = HttpAction | CollectionAction
/** A collection action as stored: its filter and fields as JSON text, since the Store refuses `$` in field names. */
export type StoredCollectionAction = Omit<CollectionAction, 'filter' | 'set'> & { filter: string, set: string | null }
export type StoredAction = HttpAction | StoredCollectionAction

export type ScheduleRecord = {
  _id: string
  projectId: string
  name: string
  trigger: Trigger
  enabled: boolean
  overlap: OverlapPolicy
  timeoutSeconds: number
  catchUp: CatchUpPolicy
  action: StoredAction
  /** What the schedule may do when it runs; never more than `runAs` holds, checked on save and on every run. */
  permissions: string[]
  /** The platform user the schedule acts as: who created it, or last changed its action or permissions. */
  runAs: string
  /** The HMAC secret its HTTP calls are signed with, sealed. */
  secret: string
  /** After a rotation, the secret it replaced, still signing beside it until `expiresAt` (sealed as `secret` is). */
  previousSecret?: { sealed: string, expiresAt: Date }
  /** Where an interval's grid starts. */
  anchor: Date
  /** The first slot not yet handed to the queue; null while disabled or when nothing fires again. */
  nextSlotAt: Date | null
  createdAt: Date
  updatedAt: Date
}

export interface ScheduleInput {
  name: string
  trigger: Trigger
  enabled?: boolean
  overlap?: OverlapPolicy
  timeoutSeconds?: number
  catchUp?: CatchUpPolicy
  action: ScheduleAction
  permissions?: string[]
}

export type SchedulePatch = Partial<ScheduleInput>

export const SCHEDULE_LIMITS = { perProject: 100, timeoutDefaultSeconds: 30, timeoutMaxSeconds: 300 }
/** The job that turns due slots into slot jobs; every node registers it, the queue runs it on one at a time. */
export const SCHEDULES_TICK_JOB = 'auxiliary.schedules.tick'
export const SCHEDULES_TICK_EVERY_MS = 15_000
/** One slot's run; keyed by schedule and slot, so a slot handed over twice is still one job. */
export const SCHEDULE_SLOT_JOB = 'auxiliary.schedules.slot'
/** A slot found later than this ran while nothing was up to run it: missed, and handled by the schedule's catch-up setting. */
export const SCHEDULE_LATE_MS = 5 * 60_000
const NEXT_FIRES = 5
/** The permissions a collection action needs; an HTTP call needs none. */
const ACTION_NEEDS: Record<CollectionAction['operation'], string> = { delete: 'records.write', update: 'records.write' }

export interface SchedulesDeps {
  store: Store
  clock: Clock
  newId: IdGenerator
  secrets: SecretBox
  guard: AddressGuard
  cursors: Cursors
  jobs: Pick<JobQueue, 'enqueueKeyed'>
  collectionExists: (projectId: string, name: string) => Promise<boolean>
}

export type SlotTrigger = 'slot' | 'catch-up' | 'missed'
export interface SlotPayload { [key: string]: unknown, scheduleId: string, slot: string, trigger: SlotTrigger }

export function neededPermissions (action: ScheduleAction): string[] {
  return action.type === 'collection' ? [ACTION_NEEDS[action.operation]] : []
}

export class Schedules {
  readonly records: StoreCollection<ScheduleRecord>

  constructor (private readonly deps: SchedulesDeps) {
    this.records = deps.store.collection<ScheduleRecord>(AUXILIARY_SCHEDULES)
  }

  async init (): Promise<void> {
    await this.records.createIndex({ projectId: 1, _id: 1 })
    await this.records.createIndex({ enabled: 1, nextSlotAt: 1 })
  }

  /** The answer: what it is, its next five fire times, never its secret. */
  view (record: ScheduleRecord) {
    const now = this.deps.clock.now()
    return {
      id: record._id,
      projectId: record.projectId,
      name: record.name,
      trigger: record.trigger,
      enabled: record.enabled,
      overlap: record.overlap,
      timeoutSeconds: record.timeoutSeconds,
      catchUp: record.catchUp,
      action: apiAction(record.action),
      permissions: record.permissions,
      runAs: record.runAs,
      nextFires: nextFires(record.trigger, record.anchor, now, NEXT_FIRES).map(isoString),
      createdAt: isoString(record.createdAt),
      updatedAt: isoString(record.updatedAt)
    }
  }

  async list (projectId: string, page: PageRequest): Promise<Page<ScheduleRecord>> {
    const { docs, nextCursor } = await keysetPage(this.records, { projectId }, OLDEST_FIRST, page, this.deps.cursors, 'auxiliary-schedules')
    return { items: docs, nextCursor }
  }

  async find (projectId: string, id: string): Promise<ScheduleRecord | null> {
    return await this.records.findOne({ _id: id, projectId })
  }

  async findById (id: string): Promise<ScheduleRecord | null> {
    return await this.records.findOne({ _id: id })
  }

  /** A new schedule acting as `caller`, who holds `held` in the project; its secret is answered this once. */
  async create (projectId: string, caller: { userId: string, held: ReadonlySet<string> }, input: ScheduleInput): Promise<{ record: ScheduleRecord, secret: string }> {
    const now = this.deps.clock.now()
    await this.check(projectId, input, caller.held)
    if (await this.records.countDocuments({ projectId }) >= SCHEDULE_LIMITS.perProject) throw auxiliaryErrors.scheduleLimitReached({ limit: SCHEDULE_LIMITS.perProject })
    const _id = this.deps.newId()
    const secret = generateToken('schsec', 32)
    const enabled = input.enabled ?? true
    const record: ScheduleRecord = {
      _id,
      projectId,
      name: input.name,
      trigger: input.trigger,
      enabled,
      overlap: input.overlap ?? 'skip',
      timeoutSeconds: input.timeoutSeconds ?? SCHEDULE_LIMITS.timeoutDefaultSeconds,
      catchUp: input.catchUp ?? 'once',
      action: normalAction(input.action),
      permissions: [...new Set(input.permissions ?? [])].sort(),
      runAs: caller.userId,
      secret: this.deps.secrets.seal(secret, sealedFor(_id)),
      anchor: now,
      nextSlotAt: enabled ? nextFire(input.trigger, now, now) : null,
      createdAt: now,
      updatedAt: now
    }
    await this.records.insertOne(record)
    return { record, secret }
  }

  /**
   * A change. A new trigger or enabling starts counting from now (slots
   * before it are not owed); a new action or permissions makes the caller the
   * one the schedule acts as, judged against what they hold.
   */
  async update (record: ScheduleRecord, caller: { userId: string, held: ReadonlySet<string> }, patch: SchedulePatch): Promise<ScheduleRecord> {
    const now = this.deps.clock.now()
    const merged: ScheduleInput = { ...record, action: apiAction(record.action), ...patch }
    const actsAnew = patch.action !== undefined || patch.permissions !== undefined
    await this.check(record.projectId, merged, actsAnew ? caller.held : null)
    const retimed = patch.trigger !== undefined || (patch.enabled === true && !record.enabled)
    const anchor = retimed ? now : record.anchor
    const enabled = merged.enabled ?? true
    const changes: Partial<ScheduleRecord> = {
      name: merged.name,
      trigger: merged.trigger,
      enabled,
      overlap: merged.overlap ?? 'skip',
      timeoutSeconds: merged.timeoutSeconds ?? SCHEDULE_LIMITS.timeoutDefaultSeconds,
      catchUp: merged.catchUp ?? 'once',
      action: normalAction(merged.action),
      permissions: [...new Set(merged.permissions ?? [])].sort(),
      anchor,
      nextSlotAt: !enabled ? null : retimed || record.nextSlotAt === null ? nextFire(merged.trigger, anchor, now) : record.nextSlotAt,
      updatedAt: now,
      ...(actsAnew ? { runAs: caller.userId } : {})
    }
    const updated = await this.records.findOneAndUpdate({ _id: record._id }, { $set: changes }, { returnDocument: 'after' })
    if (updated === null) throw auxiliaryErrors.scheduleNotFound()
    return updated
  }

  async delete (record: ScheduleRecord): Promise<void> {
    await this.records.deleteOne({ _id: record._id })
  }

  async purgeProject (projectId: string): Promise<void> {
    await this.records.deleteMany({ projectId })
  }

  /** The secrets that sign a call now, current first: the previous one too while its grace lasts. */
  openSecrets (record: ScheduleRecord): string[] {
    const current = this.deps.secrets.open(record.secret, sealedFor(record._id))
    const previous = record.previousSecret
    if (previous === undefined || previous.expiresAt.getTime() <= this.deps.clock.nowMs()) return [current]
    return [current, this.deps.secrets.open(previous.sealed, sealedFor(record._id))]
  }

  /**
   * A new signing secret, answered this once; the current one keeps signing
   * beside it for `previousExpiresInSeconds` (0: retired at once), so a
   * receiver switches without refusing a call. At most two sign: an older
   * previous secret is dropped. Compare-and-set on the current secret, so two
   * rotations at once cannot both answer a secret that does not sign.
   */
  async rotateSecret (record: ScheduleRecord, graceSeconds: number): Promise<{ record: ScheduleRecord, secret: string }> {
    const now = this.deps.clock.now()
    const secret = generateToken('schsec', 32)
    const sealed = this.deps.secrets.seal(secret, sealedFor(record._id))
    const update = graceSeconds === 0
      ? { $set: { secret: sealed, updatedAt: now }, $unset: { previousSecret: '' } }
      : { $set: { secret: sealed, previousSecret: { sealed: record.secret, expiresAt: new Date(now.getTime() + graceSeconds * 1000) }, updatedAt: now } }
    const updated = await this.records.findOneAndUpdate({ _id: record._id, secret: record.secret }, update, { returnDocument: 'after' })
    if (updated === null) {
      if (await this.records.findOne({ _id: record._id }) === null) throw auxiliaryErrors.scheduleNotFound()
      throw auxiliaryErrors.scheduleSecretChanged()
    }
    return { record: updated, secret }
  }

  /**
   * Hands every due slot to the queue, then moves the schedule past it. A
   * slot found up to SCHEDULE_LATE_MS late runs as usual; slots older than
   * that were missed (nothing was up): the schedule's catch-up setting runs
   * the first of them once or records it skipped. The job is keyed by slot
   * and the move is conditional on the slot it started from, so nodes ticking
   * at once hand each slot over once, and a node dying between the two steps
   * leaves a slot the next tick hands over again to the same key.
   */
  async tick (now: Date = this.deps.clock.now()): Promise<number> {
    const due = await this.records.find({ enabled: true, nextSlotAt: { $lte: now } }, { sort: { nextSlotAt: 1 }, limit: 500 }).toArray()
    let handed = 0
    for (const record of due) {
      const first = record.nextSlotAt
      if (first === null) continue
      const onTimeFrom = new Date(now.getTime() - SCHEDULE_LATE_MS)
      const slots: Array<{ at: Date, trigger: SlotTrigger }> = []
      if (first < onTimeFrom) slots.push({ at: first, trigger: record.catchUp === 'once' ? 'catch-up' : 'missed' })
      let at: Date | null = first >= onTimeFrom ? first : nextFire(record.trigger, record.anchor, new Date(onTimeFrom.getTime() - 1))
      // Every slot inside the on-time window (a few, for a seconds-level cron); bounded in case the window holds many.
      while (at !== null && at <= now && slots.length < 1000) {
        slots.push({ at, trigger: 'slot' })
        at = nextFire(record.trigger, record.anchor, at)
      }
      for (const slot of slots) {
        const payload: SlotPayload = { scheduleId: record._id, slot: slot.at.toISOString(), trigger: slot.trigger }
        await this.deps.jobs.enqueueKeyed(SCHEDULE_SLOT_JOB, `${record._id}:${payload.slot}`, payload)
        handed++
      }
      const following = at !== null && at > now ? at : nextFire(record.trigger, record.anchor, now)
      await this.records.updateOne({ _id: record._id, nextSlotAt: first }, { $set: { nextSlotAt: following } })
    }
    return handed
  }

  /** Refuses what cannot run, naming the field; `held`, when the caller sets what the schedule may do, bounds its permissions. */
  private async check (projectId: string, input: ScheduleInput, held: ReadonlySet<string> | null): Promise<void> {
    checkTrigger(input.trigger, this.deps.clock.now())
    const timeout = input.timeoutSeconds ?? SCHEDULE_LIMITS.timeoutDefaultSeconds
    if (!Number.isInteger(timeout) || timeout < 1 || timeout > SCHEDULE_LIMITS.timeoutMaxSeconds) {
      throw auxiliaryErrors.scheduleInvalid({ path: 'body.timeoutSeconds', why: `must be a whole number of seconds from 1 to ${SCHEDULE_LIMITS.timeoutMaxSeconds}` })
    }
    const permissions = input.permissions ?? []
    const { action } = input
    if (action.type === 'http') await this.checkUrl(action.url)
    else {
      if (!await this.deps.collectionExists(projectId, action.collection)) throw auxiliaryErrors.scheduleInvalid({ path: 'body.action.collection', why: `"${action.collection}" is not a collection of the project` })
      if (action.operation === 'update' && (action.set === null || action.set === undefined || Object.keys(action.set).length === 0)) throw auxiliaryErrors.scheduleInvalid({ path: 'body.action.set', why: 'must name at least one field an update sets' })
      if (action.operation === 'delete' && Object.keys(action.filter ?? {}).length === 0 && (action.olderThanDays ?? null) === null) {
        throw auxiliaryErrors.scheduleInvalid({ path: 'body.action.filter', why: 'or olderThanDays must narrow a delete: a schedule never deletes every record' })
      }
    }
    for (const needed of neededPermissions(action)) {
      if (!permissions.includes(needed)) throw auxiliaryErrors.scheduleInvalid({ path: 'body.permissions', why: `must include ${needed}, which the action needs` })
    }
    if (held !== null) {
      for (const permission of permissions) if (!held.has(permission)) throw auxiliaryErrors.schedulePermissionExceeded({ permission })
    }
  }

  private async checkUrl (raw: string): Promise<void> {
    let url: URL
    try {
      url = new URL(raw)
    } catch {
      throw auxiliaryErrors.scheduleInvalid({ path: 'body.action.url', why: 'is not a URL' })
    }
    if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.username !== '' || url.password !== '') {
      throw auxiliaryErrors.scheduleInvalid({ path: 'body.action.url', why: 'must be an http(s) URL without credentials' })
    }
    const verdict = await this.deps.guard.check(url)
    if (!verdict.ok && !verdict.unresolved) throw auxiliaryErrors.scheduleUrlForbidden({ path: 'body.action.url', kind: verdict.kind })
  }
}

function sealedFor (scheduleId: string): string {
  return `auxiliary:schedule:${scheduleId}`
}

/** Each schedule's signing secret, sealed under the master key, for the re-seal job. */
export const sealedScheduleSecrets: SealedValues = {
  collection: AUXILIARY_SCHEDULES,
  values: (doc) => [...sealedAt(doc, 'secret', sealedFor(doc._id as string)), ...sealedAt(doc, 'previousSecret.sealed', sealedFor(doc._id as string))]
}

/** The action as stored: every optional part present, a collection action's filter and fields as JSON text. */
function normalAction (action: ScheduleAction): StoredAction {
  if (action.type === 'http') return { type: 'http', method: action.method, url: action.url, headers: action.headers ?? {}, body: action.body ?? null }
  const set = action.operation === 'update' ? action.set ?? null : null
  return { type: 'collection', collection: action.collection, operation: action.operation, filter: JSON.stringify(action.filter ?? {}), olderThanDays: action.olderThanDays ?? null, set: set === null ? null : JSON.stringify(set) }
}

/** The action as the API shows it and a run uses it. */
export function apiAction (action: StoredAction): ScheduleAction {
  if (action.type === 'http') return action
  return { ...action, filter: JSON.parse(action.filter) as Record<string, unknown>, set: action.set === null ? null : JSON.parse(action.set) as Record<string, unknown> }
}
