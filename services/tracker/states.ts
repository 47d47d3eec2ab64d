import type { Clock } from '../platform/clock.js'
import type { Cursors } from '../collections/query.js'
import type { IdGenerator } from '../platform/ids.js'
import { isoString } from '../platform/iso-dates.js'
import { DuplicateKeyError } from '../store/errors.js'
import type { Filter, Store, StoreCollection } from '../store/types.js'
import {
  TRACKER_LIMITS, type CreateStateBodyT, type ListStatesQueryT, type PageOf, type StateGroupT, type TrackerStateT, type UpdateStateBodyT
} from '../../schemas/tracker.js'
import { requireAdmin, requireWritable, type TrackerScope } from './access.js'
import { trackerErrors } from './errors.js'
import type { FollowUps } from './follow-ups.js'
import { keysetPage, listScope, sortPlan } from './paging.js'
import type { TrackerProjects } from './projects.js'
import { TRACKER_COLLECTIONS, type StateRecord } from './records.js'

export const DELETE_STATE = 'stateDelete'
const ORDER = sortPlan([['sequence', 1], ['_id', 1]])
const SEEDS: Array<[string, string, StateGroupT]> = [
  ['Backlog', '#a3a3a3', 'backlog'],
  ['Todo', '#3a3a3a', 'unstarted'],
  ['In Progress', '#f59e0b', 'started'],
  ['Done', '#16a34a', 'completed'],
  ['Cancelled', '#dc2626', 'cancelled'],
  ['Triage', '#4e5355', 'triage']
]

export const nameKey = (name: string): string => name.trim().normalize('NFC').toLowerCase()

function toView (record: StateRecord, defaultStateId: string): TrackerStateT {
  return {
    id: record._id,
    name: record.name,
    color: record.color,
    group: record.group,
    description: record.description,
    sequence: record.sequence,
    default: record._id === defaultStateId,
    createdAt: isoString(record.createdAt),
    updatedAt: isoString(record.updatedAt)
  }
}

function checkName (name: string): string {
  const trimmed = name.trim()
  if (trimmed === '') throw trackerErrors.invalidValue({ path: 'body.name', problem: 'is blank' })
  return trimmed
}

/**
 * Workflow states. Which one is the default is the project document's
 * `defaultStateId`, so there is exactly one by construction; a state's group
 * never changes, so the group every item keeps beside its state stays true.
 */
export class TrackerStates {
  readonly records: StoreCollection<StateRecord>

  constructor (private readonly store: Store, private readonly deps: { clock: Clock, newId: IdGenerator, cursors: Cursors, projects: TrackerProjects, followUps: FollowUps }) {
    this.records = store.collection<StateRecord>(TRACKER_COLLECTIONS.states)
  }

  async init (): Promise<void> {
    await this.records.createIndex({ lpId: 1, nameKey: 1 }, { unique: true })
    await this.records.createIndex({ lpId: 1, sequence: 1, _id: 1 })
  }

  /** A new project's states; the id of its default (Backlog). */
  async seed (projectId: string, lpId: string): Promise<string> {
    const now = this.deps.clock.now()
    const records: StateRecord[] = SEEDS.map(([name, color, group], index) => ({
      _id: this.deps.newId(), projectId, lpId, name, nameKey: nameKey(name), color, group, description: '', sequence: (index + 1) * 1000, deletingTo: null, createdAt: now, updatedAt: now
    }))
    await this.records.insertMany(records)
    return records[0]._id
  }

  async list (scope: TrackerScope, query: ListStatesQueryT): Promise<PageOf<TrackerStateT>> {
    const filter: Filter = { lpId: scope.project._id, deletingTo: null }
    if (query.includeTriage !== true) filter.group = { $ne: 'triage' }
    const { docs, nextCursor } = await keysetPage(this.records, filter, ORDER, query, this.deps.cursors, listScope(scope.projectId, `states:${scope.project._id}`, { triage: query.includeTriage === true }, ORDER))
    return { items: docs.map((doc) => toView(doc, scope.project.defaultStateId)), nextCursor }
  }

  async get (scope: TrackerScope, stateId: string): Promise<TrackerStateT> {
    return toView(await this.record(scope.project._id, stateId), scope.project.defaultStateId)
  }

  /** A state of the project, read shared (every item write asks). */
  async find (lpId: string, stateId: string): Promise<StateRecord | null> {
    const state = await this.store.extensions.shared<StateRecord>(TRACKER_COLLECTIONS.states).findOne({ _id: stateId })
    return state === null || state.lpId !== lpId ? null : state
  }

  async record (lpId: string, stateId: string): Promise<StateRecord> {
    const state = await this.find(lpId, stateId)
    if (state === null || state.deletingTo !== null) throw trackerErrors.stateNotFound()
    return state
  }

  /** 400 unless the state may hold items now (of the project, not being deleted; triage only when asked for). */
  async usable (lpId: string, stateId: string, path: string, options: { triage?: boolean, group?: StateGroupT } = {}): Promise<StateRecord> {
    const state = await this.find(lpId, stateId)
    if (state === null || state.deletingTo !== null) throw trackerErrors.invalidReference({ path, problem: 'is not a state of this tracker project' })
    if (state.group === 'triage' && options.triage !== true) throw trackerErrors.invalidReference({ path, problem: 'is the triage state, which holds intake items only' })
    if (options.group !== undefined && state.group !== options.group) throw trackerErrors.invalidReference({ path, problem: `is not a ${options.group} state` })
    return state
  }

  /** The project's triage state (every project has one from its start). */
  async triage (lpId: string): Promise<StateRecord> {
    const state = await this.records.findOne({ lpId, group: 'triage', deletingTo: null })
    if (state === null) throw trackerErrors.stateNotFound()
    return state
  }

  /** The first state of a group in the project's order (auto-close picks the first cancelled one). */
  async firstOfGroup (lpId: string, group: StateGroupT): Promise<StateRecord | null> {
    return await this.records.findOne({ lpId, group, deletingTo: null }, { sort: { sequence: 1, _id: 1 } })
  }

  async create (scope: TrackerScope, input: CreateStateBodyT): Promise<TrackerStateT> {
    requireAdmin(scope)
    requireWritable(scope)
    const lpId = scope.project._id
    const name = checkName(input.name)
    if (await this.records.countDocuments({ lpId }) >= TRACKER_LIMITS.statesPerProject) throw trackerErrors.limitReached({ what: 'tracker project', limit: TRACKER_LIMITS.statesPerProject, items: 'states' })
    const last = await this.records.findOne({ lpId }, { sort: { sequence: -1, _id: -1 } })
    const now = this.deps.clock.now()
    const record: StateRecord = {
      _id: this.deps.newId(),
      projectId: scope.projectId,
      lpId,
      name,
      nameKey: nameKey(name),
      color: input.color.toLowerCase(),
      group: input.group,
      description: input.description ?? '',
      sequence: input.sequence ?? (last?.sequence ?? 0) + 1000,
      deletingTo: null,
      createdAt: now,
      updatedAt: now
    }
    await this.insert(record)
    let defaultStateId = scope.project.defaultStateId
    if (input.default === true) defaultStateId = (await this.deps.projects.setDefaultState(scope, record._id)).defaultStateId
    return toView(record, defaultStateId)
  }

  async update (scope: TrackerScope, stateId: string, input: UpdateStateBodyT): Promise<TrackerStateT> {
    requireAdmin(scope)
    requireWritable(scope)
    const state = await this.record(scope.project._id, stateId)
    const set: Partial<StateRecord> = { updatedAt: this.deps.clock.now() }
    if (input.name !== undefined) {
      set.name = checkName(input.name)
      set.nameKey = nameKey(set.name)
    }
    if (input.color !== undefined) set.color = input.color.toLowerCase()
    if (input.description !== undefined) set.description = input.description
    if (input.sequence !== undefined) set.sequence = input.sequence
    let updated: StateRecord | null
    try {
      updated = await this.records.findOneAndUpdate({ _id: state._id, deletingTo: null }, { $set: set }, { returnDocument: 'after' })
    } catch (error) {
      if (error instanceof DuplicateKeyError) throw trackerErrors.nameTaken({ what: 'state', name: set.name ?? '' })
      throw error
    }
    if (updated === null) throw trackerErrors.stateNotFound()
    let defaultStateId = scope.project.defaultStateId
    if (input.default === true && state._id !== defaultStateId) {
      if (state.group === 'triage') throw trackerErrors.invalidValue({ path: 'body.default', problem: 'the triage state cannot be the default' })
      defaultStateId = (await this.deps.projects.setDefaultState(scope, state._id)).defaultStateId
    }
    return toView(updated, defaultStateId)
  }

  /**
   * The default state, and one that items hold (archived ones included), go
   * only with a target: the task (stateDelete in cascades.ts) marks the
   * state, hands the default over, moves its items and then deletes it.
   */
  async delete (scope: TrackerScope, stateId: string, targetStateId: string | undefined, itemsHeld: (lpId: string, stateId: string) => Promise<number>): Promise<void> {
    requireAdmin(scope)
    requireWritable(scope)
    const lpId = scope.project._id
    const state = await this.record(lpId, stateId)
    if (state.group === 'triage') throw trackerErrors.stateGroupFixed({ problem: 'The triage state belongs to intake and stays' })
    if (targetStateId === undefined) {
      if (state._id === scope.project.defaultStateId) throw trackerErrors.stateInUse({ problem: 'is the default' })
      const held = await itemsHeld(lpId, state._id)
      if (held > 0) throw trackerErrors.stateInUse({ problem: `holds ${held} item(s)`, count: held })
    } else {
      if (targetStateId === stateId) throw trackerErrors.invalidReference({ path: 'query.targetStateId', problem: 'is the state being deleted' })
      await this.usable(lpId, targetStateId, 'query.targetStateId')
    }
    await this.deps.followUps.guard({ kind: DELETE_STATE, projectId: scope.projectId, lpId, stateId, targetStateId: targetStateId ?? null })
  }

  /** Step one of a delete: no item may enter the state from now on. */
  async markDeleting (lpId: string, stateId: string, targetStateId: string): Promise<StateRecord | null> {
    await this.records.updateOne({ _id: stateId, lpId, deletingTo: null }, { $set: { deletingTo: targetStateId, updatedAt: this.deps.clock.now() } })
    return await this.records.findOne({ _id: stateId, lpId })
  }

  async remove (lpId: string, stateId: string): Promise<void> {
    await this.records.deleteOne({ _id: stateId, lpId, deletingTo: { $ne: null } })
  }

  async purge (lpId: string): Promise<void> {
    await this.records.deleteMany({ lpId })
  }

  private async insert (record: StateRecord): Promise<void> {
    try {
      await this.records.insertOne(record)
    } catch (error) {
      if (error instanceof DuplicateKeyError) throw trackerErrors.nameTaken({ what: 'state', name: record.name })
      throw error
    }
  }
}
