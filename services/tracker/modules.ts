import type { Clock } from '../platform/clock.js'
import type { Cursors } from '../collections/query.js'
import type { IdGenerator } from '../platform/ids.js'
import { isoString } from '../platform/iso-dates.js'
import { DuplicateKeyError } from '../store/errors.js'
import type { Store, StoreCollection } from '../store/types.js'
import type { ListQueryT, PageOf } from '../../schemas/tracker.js'
import type { CreateModuleBodyT, ModuleItemsBodyT, ModuleT, UpdateModuleBodyT } from '../../schemas/tracker-planning.js'
import { ownsOrAdmin, refuseGuest, requireFeature, requireWritable, type TrackerScope } from './access.js'
import { isDay } from './calendar.js'
import { trackerErrors } from './errors.js'
import type { FollowUps } from './follow-ups.js'
import { checkUrl } from './links.js'
import type { TrackerMembers } from './members.js'
import { keysetPage, listScope, sortPlan } from './paging.js'
import type { Progress } from './progress.js'
import { TRACKER_COLLECTIONS, type ModuleRecord } from './records.js'
import { nameKey } from './states.js'

export const DELETE_MODULE = 'moduleDelete'
const ORDER = sortPlan([['_id', 1]])

/** Modules: a named body of work (an epic, a feature) with a status, a lead, members and links; items join several. */
export class TrackerModules {
  readonly records: StoreCollection<ModuleRecord>

  constructor (store: Store, private readonly deps: { clock: Clock, newId: IdGenerator, cursors: Cursors, members: TrackerMembers, progress: Progress, followUps: FollowUps }) {
    this.records = store.collection<ModuleRecord>(TRACKER_COLLECTIONS.modules)
  }

  async init (): Promise<void> {
    await this.records.createIndex({ lpId: 1, nameKey: 1 }, { unique: true })
  }

  async view (module: ModuleRecord): Promise<ModuleT> {
    return {
      id: module._id,
      name: module.name,
      description: module.description,
      status: module.status,
      leadId: module.leadId,
      memberIds: module.memberIds,
      startDate: module.startDate,
      targetDate: module.targetDate,
      links: module.links,
      progress: await this.deps.progress.of(module.lpId, { moduleIds: module._id }),
      createdBy: module.createdBy,
      createdAt: isoString(module.createdAt),
      updatedAt: isoString(module.updatedAt),
      version: module.version
    }
  }

  async list (scope: TrackerScope, page: ListQueryT): Promise<PageOf<ModuleT>> {
    this.guard(scope)
    const lpId = scope.project._id
    const { docs, nextCursor } = await keysetPage(this.records, { lpId, deletedAt: null }, ORDER, page, this.deps.cursors, listScope(scope.projectId, `modules:${lpId}`, null, ORDER))
    const items: ModuleT[] = []
    for (const doc of docs) items.push(await this.view(doc))
    return { items, nextCursor }
  }

  async get (scope: TrackerScope, moduleId: string): Promise<ModuleT> {
    this.guard(scope)
    return await this.view(await this.record(scope.project._id, moduleId))
  }

  async create (scope: TrackerScope, input: CreateModuleBodyT): Promise<ModuleT> {
    this.guard(scope)
    requireWritable(scope)
    const now = this.deps.clock.now()
    const fields = await this.fields(scope, input, null)
    const record: ModuleRecord = {
      _id: this.deps.newId(),
      projectId: scope.projectId,
      lpId: scope.project._id,
      name: '',
      nameKey: '',
      description: '',
      status: 'backlog',
      leadId: null,
      memberIds: [],
      startDate: null,
      targetDate: null,
      links: [],
      createdBy: scope.actor.userId,
      deletedAt: null,
      createdAt: now,
      updatedAt: now,
      version: 1,
      ...fields
    }
    try {
      await this.records.insertOne(record)
    } catch (error) {
      if (error instanceof DuplicateKeyError) throw trackerErrors.nameTaken({ what: 'module', name: record.name })
      throw error
    }
    return await this.view(record)
  }

  async update (scope: TrackerScope, moduleId: string, input: UpdateModuleBodyT, ifMatch?: number): Promise<ModuleT> {
    this.guard(scope)
    requireWritable(scope)
    const module = await this.record(scope.project._id, moduleId)
    if (ifMatch !== undefined && ifMatch !== module.version) throw trackerErrors.versionMismatch({ what: 'module', expected: ifMatch, actual: module.version })
    const set = { ...await this.fields(scope, input, module), updatedAt: this.deps.clock.now(), version: module.version + 1 }
    let updated: ModuleRecord | null
    try {
      updated = await this.records.findOneAndUpdate({ _id: moduleId, version: module.version, deletedAt: null }, { $set: set }, { returnDocument: 'after' })
    } catch (error) {
      if (error instanceof DuplicateKeyError) throw trackerErrors.nameTaken({ what: 'module', name: set.name ?? '' })
      throw error
    }
    if (updated === null) throw trackerErrors.changed({ what: 'module' })
    return await this.view(updated)
  }

  /** Marked deleted (gone for readers), then items let go of it (cascades.ts, moduleDelete). */
  async delete (scope: TrackerScope, moduleId: string): Promise<void> {
    this.guard(scope)
    requireWritable(scope)
    const module = await this.record(scope.project._id, moduleId)
    if (!ownsOrAdmin(scope, module.createdBy)) throw trackerErrors.notYours({ owner: 'creator', action: 'delete this module' })
    await this.deps.followUps.guard({ kind: DELETE_MODULE, projectId: scope.projectId, lpId: module.lpId, moduleId }, async () => {
      // The name is freed at once: the unique index sees the deleted module's key no more.
      await this.records.updateOne({ _id: moduleId, deletedAt: null }, { $set: { deletedAt: this.deps.clock.now(), nameKey: `${moduleId}:deleted` } })
    })
  }

  async remove (lpId: string, moduleId: string): Promise<void> {
    await this.records.deleteOne({ _id: moduleId, lpId, deletedAt: { $ne: null } })
  }

  /** The module ids a membership change leaves an item with (the writes go through WorkItems). */
  async itemChanges (scope: TrackerScope, moduleId: string, input: ModuleItemsBodyT): Promise<{ add: string[], remove: string[] }> {
    this.guard(scope)
    requireWritable(scope)
    await this.record(scope.project._id, moduleId)
    return { add: input.add ?? [], remove: input.remove ?? [] }
  }

  /** What item writes ask (ItemRules): every id a live module of the project. */
  async checkIds (scope: TrackerScope, moduleIds: string[], path: string): Promise<void> {
    if (moduleIds.length === 0) return
    requireFeature(scope, 'modules')
    const found = new Set((await this.records.find({ lpId: scope.project._id, deletedAt: null, _id: { $in: moduleIds } }, { projection: { _id: 1 } }).toArray()).map((module) => module._id))
    const index = moduleIds.findIndex((id) => !found.has(id))
    if (index >= 0) throw trackerErrors.invalidReference({ path: `${path}[${index}]`, problem: 'is not a module of this tracker project' })
  }

  async ids (lpId: string): Promise<string[]> {
    return (await this.records.find({ lpId, deletedAt: null }, { sort: { _id: 1 }, projection: { _id: 1 } }).toArray()).map((module) => module._id)
  }

  async purge (lpId: string): Promise<void> {
    await this.records.deleteMany({ lpId })
  }

  private guard (scope: TrackerScope): void {
    requireFeature(scope, 'modules')
    refuseGuest(scope, 'use modules')
  }

  private async fields (scope: TrackerScope, input: UpdateModuleBodyT, current: ModuleRecord | null): Promise<Partial<ModuleRecord>> {
    const set: Partial<ModuleRecord> = {}
    if (input.name !== undefined) {
      set.name = input.name.trim()
      if (set.name === '') throw trackerErrors.invalidValue({ path: 'body.name', problem: 'is blank' })
      set.nameKey = nameKey(set.name)
    } else if (current === null) {
      throw trackerErrors.invalidValue({ path: 'body.name', problem: 'is required' })
    }
    if (input.description !== undefined) set.description = input.description
    if (input.status !== undefined) set.status = input.status
    if (input.leadId !== undefined) {
      if (input.leadId !== null) await this.deps.members.requireMembers(scope.project._id, [input.leadId], 'body.leadId', false)
      set.leadId = input.leadId
    }
    if (input.memberIds !== undefined) {
      await this.deps.members.requireMembers(scope.project._id, input.memberIds, 'body.memberIds')
      set.memberIds = input.memberIds
    }
    for (const field of ['startDate', 'targetDate'] as const) {
      const value = input[field]
      if (value === undefined) continue
      if (value !== null && !isDay(value)) throw trackerErrors.invalidValue({ path: `body.${field}`, problem: 'is not a day (YYYY-MM-DD)' })
      set[field] = value
    }
    const start = set.startDate !== undefined ? set.startDate : current?.startDate ?? null
    const target = set.targetDate !== undefined ? set.targetDate : current?.targetDate ?? null
    if (start !== null && target !== null && target < start) throw trackerErrors.invalidValue({ path: 'body.targetDate', problem: 'is before startDate' })
    if (input.links !== undefined) {
      set.links = input.links.map((link, index) => ({ id: this.deps.newId(), url: checkUrl(link.url, `body.links[${index}].url`), title: link.title?.trim() ?? '' }))
    }
    return set
  }

  private async record (lpId: string, moduleId: string): Promise<ModuleRecord> {
    const module = await this.records.findOne({ _id: moduleId, lpId, deletedAt: null })
    if (module === null) throw trackerErrors.moduleNotFound()
    return module
  }
}
