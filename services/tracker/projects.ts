import type { Clock } from '../platform/clock.js'
import type { Cursors } from '../collections/query.js'
import type { IdGenerator } from '../platform/ids.js'
import { isoString } from '../platform/iso-dates.js'
import { DuplicateKeyError } from '../store/errors.js'
import type { Filter, SharedReads, Store, StoreCollection } from '../store/types.js'
import {
  TRACKER_LIMITS, type AutomationSettingsT, type CreateTrackerProjectBodyT, type ListTrackerProjectsQueryT, type PageOf,
  type TrackerProjectT, type TrackerRoleT, type UpdateAutomationBodyT, type UpdateTrackerProjectBodyT
} from '../../schemas/tracker.js'
import { requireAdmin, requireWritable, roleIn, type TrackerActor, type TrackerScope } from './access.js'
import { checkTimezone } from './calendar.js'
import { trackerErrors } from './errors.js'
import type { FollowUps } from './follow-ups.js'
import type { TrackerMembers } from './members.js'
import { keysetPage, listScope, sortPlan } from './paging.js'
import { TRACKER_COLLECTIONS, type MemberRecord, type TrackerProjectRecord } from './records.js'

const IDENTIFIER = /^[A-Z][A-Z0-9]{0,11}$/
const KEY = /^([A-Za-z][A-Za-z0-9]{0,11})-([1-9][0-9]{0,14})$/
const ORDER = sortPlan([['_id', 1]])
export const PURGE_PROJECT = 'projectPurge'

/** What the tracker project service asks of the settings services, wired by services/tracker/index.ts. */
export interface ProjectSettingsPort {
  /** Writes the new project's states; the default state's id. */
  seedStates: (projectId: string, lpId: string) => Promise<string>
  /** 400 unless `stateId` is a non-triage state of the project (of the cancelled group, with `group`). */
  checkState: (lpId: string, stateId: string, path: string, group?: 'cancelled') => Promise<void>
  checkEstimate: (lpId: string, estimateId: string, path: string) => Promise<void>
  /** After the project switched estimate systems: items holding points of another go without. */
  estimateSwitched: (scope: TrackerScope) => Promise<void>
  /** Everything of a deleted tracker project but the project document. */
  purge: (projectId: string, lpId: string) => Promise<void>
}

function checkIdentifier (raw: string, path: string): string {
  const identifier = raw.trim().toUpperCase()
  if (!IDENTIFIER.test(identifier)) throw trackerErrors.invalidIdentifier({ path })
  return identifier
}

export function toProjectView (record: TrackerProjectRecord, role: TrackerRoleT): TrackerProjectT {
  return {
    id: record._id,
    name: record.name,
    identifier: record.identifier,
    formerIdentifiers: record.identifiers.filter((identifier) => identifier !== record.identifier),
    description: record.description,
    leadId: record.leadId,
    defaultAssigneeId: record.defaultAssigneeId,
    defaultStateId: record.defaultStateId,
    estimateId: record.estimateId,
    timezone: record.timezone,
    visibility: record.visibility,
    guestsSeeAllItems: record.guestsSeeAllItems,
    features: record.features,
    archivedAt: record.archivedAt === null ? null : isoString(record.archivedAt),
    role,
    createdBy: record.createdBy,
    createdAt: isoString(record.createdAt),
    updatedAt: isoString(record.updatedAt),
    version: record.version
  }
}

/**
 * Tracker projects: their settings, identifiers and lifecycle, and the scope
 * a caller works in. The project document is written last when a project is
 * made (its states and members first), so a project is never seen
 * half made, and first when one is deleted (marked; the purge follows), so it
 * is never seen half gone.
 */
export class TrackerProjects {
  readonly records: StoreCollection<TrackerProjectRecord>
  // Reads of one request: frozen documents the Store's document cache may share between readers.
  private readonly shared: SharedReads<TrackerProjectRecord>
  private settings: ProjectSettingsPort | null = null

  constructor (private readonly store: Store, private readonly deps: { clock: Clock, newId: IdGenerator, cursors: Cursors, members: TrackerMembers, followUps: FollowUps }) {
    this.records = store.collection<TrackerProjectRecord>(TRACKER_COLLECTIONS.projects)
    this.shared = store.extensions.shared<TrackerProjectRecord>(TRACKER_COLLECTIONS.projects)
    deps.followUps.on(PURGE_PROJECT, async (task) => { await this.purge(String(task.projectId), String(task.lpId)) })
  }

  connect (settings: ProjectSettingsPort): void {
    this.settings = settings
  }

  private get port (): ProjectSettingsPort {
    if (this.settings === null) throw new Error('tracker projects used before services/tracker/index.ts connected them')
    return this.settings
  }

  async init (): Promise<void> {
    await this.records.createIndex({ projectId: 1, identifiers: 1 }, { unique: true })
    await this.records.createIndex({ projectId: 1, _id: 1 })
    // A key's project by its current identifier: the embedded engine cannot serve `identifiers` (an array) from an index.
    await this.records.createIndex({ projectId: 1, identifier: 1 })
  }

  /** The tracker project as `actor` may use it; 404 when it does not exist or they may not see it. */
  async scope (actor: TrackerActor, projectId: string, lpId: string): Promise<TrackerScope> {
    return await this.scopeIn(actor, projectId, await this.shared.findOne({ _id: lpId }))
  }

  /** The scope and number a work item key names (`WEB-42`, or a key from before a rename); 404 when none. */
  async scopeOfKey (actor: TrackerActor, projectId: string, key: string): Promise<{ scope: TrackerScope, seq: number }> {
    const match = KEY.exec(key.trim())
    if (match === null) throw trackerErrors.invalidKey({ key: key.slice(0, 40) })
    const identifier = match[1].toUpperCase()
    // The current identifier, read shared through its index; a former one only when no live project holds it now (the
    // unique index on `identifiers` gives an identifier to one project, so the first read cannot find another).
    const project = await this.shared.findOne({ projectId, identifier, deletedAt: null }) ??
      await this.shared.findOne({ projectId, identifiers: identifier, deletedAt: null })
    if (project === null) throw trackerErrors.itemNotFound()
    try {
      return { scope: await this.scopeIn(actor, projectId, project), seq: Number(match[2]) }
    } catch (error) {
      // A key of a project the caller may not see is a key of nothing: its identifier stays unknown to them.
      throw trackerErrors.projectNotFound.is(error) ? trackerErrors.itemNotFound() : error
    }
  }

  private async scopeIn (actor: TrackerActor, projectId: string, project: TrackerProjectRecord | null): Promise<TrackerScope> {
    if (project === null || project.projectId !== projectId || project.deletedAt !== null) throw trackerErrors.projectNotFound()
    const role = roleIn(actor, project, await this.deps.members.roleOf(project._id, actor.userId))
    if (role === null) throw trackerErrors.projectNotFound()
    return { actor, projectId, project, role, seesAllItems: role !== 'guest' || project.guestsSeeAllItems }
  }

  async list (actor: TrackerActor, projectId: string, query: ListTrackerProjectsQueryT): Promise<PageOf<TrackerProjectT>> {
    if (!actor.permissions.includes('tracker.read')) return { items: [], nextCursor: null }
    const filter: Filter = { projectId, deletedAt: null, archivedAt: query.archived === true ? { $ne: null } : null }
    const memberOf = await this.deps.members.projectsOf(projectId, actor.userId)
    if (!actor.permissions.includes('tracker.admin')) filter.$or = [{ visibility: 'public' }, { _id: { $in: memberOf } }]
    const { docs, nextCursor } = await keysetPage(this.records, filter, ORDER, query, this.deps.cursors, listScope(projectId, 'projects', { archived: query.archived === true }, ORDER))
    const items: TrackerProjectT[] = []
    for (const doc of docs) items.push(toProjectView(doc, roleIn(actor, doc, await this.deps.members.roleOf(doc._id, actor.userId)) ?? 'member'))
    return { items, nextCursor }
  }

  /**
   * States and members first, the project document last:
   * until it is written nothing is visible, and an identifier another project
   * took meanwhile refuses it (the unique index) and takes the rest back.
   */
  async create (actor: TrackerActor, projectId: string, input: CreateTrackerProjectBodyT): Promise<TrackerProjectT> {
    const identifier = checkIdentifier(input.identifier, 'body.identifier')
    const timezone = checkTimezone(input.timezone ?? 'UTC')
    if (await this.records.countDocuments({ projectId, deletedAt: null }) >= TRACKER_LIMITS.projectsPerPlatformProject) {
      throw trackerErrors.limitReached({ what: 'platform project', limit: TRACKER_LIMITS.projectsPerPlatformProject, items: 'tracker projects' })
    }
    if (await this.records.findOne({ projectId, identifiers: identifier }, { projection: { _id: 1 } }) !== null) throw trackerErrors.identifierTaken({ identifier })
    const lpId = this.deps.newId()
    const people = new Map<string, TrackerRoleT>([[actor.userId, 'admin']])
    for (const [userId, path] of [[input.leadId, 'body.leadId'], [input.defaultAssigneeId, 'body.defaultAssigneeId']] as const) {
      if (userId === undefined || userId === null || people.has(userId)) continue
      await this.checkCanUse(projectId, userId, path)
      people.set(userId, 'member')
    }
    const members: MemberRecord[] = [...people].map(([userId, role]) => this.deps.members.seedRecord(projectId, lpId, userId, role))
    const defaultStateId = await this.port.seedStates(projectId, lpId)
    await this.deps.members.seed(members)
    const now = this.deps.clock.now()
    const record: TrackerProjectRecord = {
      _id: lpId,
      projectId,
      name: input.name.trim(),
      identifier,
      identifiers: [identifier],
      description: input.description ?? '',
      leadId: input.leadId ?? null,
      defaultAssigneeId: input.defaultAssigneeId ?? null,
      defaultStateId,
      estimateId: null,
      timezone,
      visibility: input.visibility ?? 'public',
      guestsSeeAllItems: input.guestsSeeAllItems ?? false,
      features: { cycles: true, modules: true, views: true, pages: true, intake: false, ...input.features },
      automation: { autoArchiveMonths: 0, autoCloseMonths: 0, autoCloseStateId: null },
      archivedAt: null,
      deletedAt: null,
      createdBy: actor.userId,
      createdAt: now,
      updatedAt: now,
      version: 1
    }
    if (record.name === '') throw trackerErrors.invalidValue({ path: 'body.name', problem: 'is blank' })
    try {
      await this.records.insertOne(record)
    } catch (error) {
      await this.port.purge(projectId, lpId)
      await this.deps.members.purge(lpId)
      if (error instanceof DuplicateKeyError) throw trackerErrors.identifierTaken({ identifier })
      throw error
    }
    return toProjectView(record, roleIn(actor, record, 'admin') ?? 'admin')
  }

  get (scope: TrackerScope): TrackerProjectT {
    return toProjectView(scope.project, scope.role)
  }

  /** One conditional write; a new identifier joins the former ones, so their keys still resolve. */
  async update (scope: TrackerScope, input: UpdateTrackerProjectBodyT, ifMatch?: number): Promise<TrackerProjectT> {
    requireAdmin(scope)
    requireWritable(scope)
    const current = scope.project
    if (ifMatch !== undefined && ifMatch !== current.version) throw trackerErrors.versionMismatch({ what: 'tracker project', expected: ifMatch, actual: current.version })
    const set: Partial<TrackerProjectRecord> = {}
    if (input.name !== undefined) {
      set.name = input.name.trim()
      if (set.name === '') throw trackerErrors.invalidValue({ path: 'body.name', problem: 'is blank' })
    }
    if (input.description !== undefined) set.description = input.description
    if (input.timezone !== undefined) set.timezone = checkTimezone(input.timezone)
    if (input.visibility !== undefined) set.visibility = input.visibility
    if (input.guestsSeeAllItems !== undefined) set.guestsSeeAllItems = input.guestsSeeAllItems
    if (input.features !== undefined) set.features = { ...current.features, ...input.features }
    for (const field of ['leadId', 'defaultAssigneeId'] as const) {
      const userId = input[field]
      if (userId === undefined) continue
      if (userId !== null) await this.deps.members.requireMembers(current._id, [userId], `body.${field}`, false)
      set[field] = userId
    }
    if (input.defaultStateId !== undefined) {
      await this.port.checkState(current._id, input.defaultStateId, 'body.defaultStateId')
      set.defaultStateId = input.defaultStateId
    }
    if (input.estimateId !== undefined) {
      if (input.estimateId !== null) await this.port.checkEstimate(current._id, input.estimateId, 'body.estimateId')
      set.estimateId = input.estimateId
    }
    const update: Record<string, unknown> = { $set: { ...set, updatedAt: this.deps.clock.now(), version: current.version + 1 } }
    if (input.identifier !== undefined) {
      const identifier = checkIdentifier(input.identifier, 'body.identifier')
      ;(update.$set as Partial<TrackerProjectRecord>).identifier = identifier
      update.$addToSet = { identifiers: identifier }
    }
    const updated = await this.write(current, update)
    const next = { ...scope, project: updated }
    if (set.estimateId !== undefined && set.estimateId !== current.estimateId) await this.port.estimateSwitched(next)
    return toProjectView(updated, scope.role)
  }

  async setDefaultState (scope: TrackerScope, stateId: string): Promise<TrackerProjectRecord> {
    return await this.write(scope.project, { $set: { defaultStateId: stateId, updatedAt: this.deps.clock.now(), version: scope.project.version + 1 } })
  }

  /** A state delete hands the default over to its target, whatever else changed on the project meanwhile. */
  async replaceDefaultState (lpId: string, from: string, to: string): Promise<void> {
    await this.records.updateOne({ _id: lpId, defaultStateId: from }, { $set: { defaultStateId: to, updatedAt: this.deps.clock.now() }, $inc: { version: 1 } })
  }

  /** The project document as stored, deleted or not (for follow-ups). */
  async record (lpId: string): Promise<TrackerProjectRecord | null> {
    return await this.records.findOne({ _id: lpId })
  }

  automation (scope: TrackerScope): AutomationSettingsT {
    return scope.project.automation
  }

  async setAutomation (scope: TrackerScope, input: UpdateAutomationBodyT): Promise<AutomationSettingsT> {
    requireAdmin(scope)
    requireWritable(scope)
    const automation = { ...scope.project.automation, ...input }
    if (input.autoCloseStateId !== undefined && input.autoCloseStateId !== null) await this.port.checkState(scope.project._id, input.autoCloseStateId, 'body.autoCloseStateId', 'cancelled')
    const updated = await this.write(scope.project, { $set: { automation, updatedAt: this.deps.clock.now(), version: scope.project.version + 1 } })
    return updated.automation
  }

  async archive (scope: TrackerScope): Promise<TrackerProjectT> {
    requireAdmin(scope)
    if (scope.project.archivedAt !== null) return this.get(scope)
    const now = this.deps.clock.now()
    return toProjectView(await this.write(scope.project, { $set: { archivedAt: now, updatedAt: now, version: scope.project.version + 1 } }), scope.role)
  }

  async restore (scope: TrackerScope): Promise<TrackerProjectT> {
    requireAdmin(scope)
    if (scope.project.archivedAt === null) return this.get(scope)
    return toProjectView(await this.write(scope.project, { $set: { archivedAt: null, updatedAt: this.deps.clock.now(), version: scope.project.version + 1 } }), scope.role)
  }

  /** Marks the project deleted (one write: it is gone for every reader), then purges what it held. */
  async delete (scope: TrackerScope): Promise<void> {
    requireAdmin(scope)
    const now = this.deps.clock.now()
    await this.write(scope.project, { $set: { deletedAt: now, updatedAt: now, version: scope.project.version + 1 } })
    await this.deps.followUps.guard({ kind: PURGE_PROJECT, projectId: scope.projectId, lpId: scope.project._id })
  }

  /** When a platform project goes, its tracker projects go with it. */
  async deleteAllForProject (projectId: string): Promise<void> {
    await this.records.updateMany({ projectId, deletedAt: null }, { $set: { deletedAt: this.deps.clock.now() } })
    for (const project of await this.records.find({ projectId }, { projection: { _id: 1 } }).toArray()) await this.purge(projectId, project._id)
  }

  /** Everything the project held, then its document: idempotent, so the follow-up may run it again. */
  private async purge (projectId: string, lpId: string): Promise<void> {
    await this.port.purge(projectId, lpId)
    await this.deps.members.purge(lpId)
    // The number counter of a project made before numbers were counted from its items (ItemStore.nextNumber).
    await this.store.collection(TRACKER_COLLECTIONS.counters).deleteOne({ _id: lpId })
    await this.records.deleteOne({ _id: lpId, deletedAt: { $ne: null } })
  }

  /** Projects with an automation switched on, for the daily run. */
  async withAutomation (): Promise<TrackerProjectRecord[]> {
    return await this.records.find({
      deletedAt: null, archivedAt: null, $or: [{ 'automation.autoArchiveMonths': { $gt: 0 } }, { 'automation.autoCloseMonths': { $gt: 0 } }]
    }).toArray()
  }

  private async checkCanUse (projectId: string, userId: string, path: string): Promise<void> {
    if (!(await this.deps.members.canUse(projectId, userId))) {
      throw trackerErrors.notAMember({ path, problem: `${userId} cannot use this platform project's tracker (tracker.read)` })
    }
  }

  /** One write conditional on the version the caller read: 409 when someone else wrote first. */
  private async write (current: TrackerProjectRecord, update: Record<string, unknown>): Promise<TrackerProjectRecord> {
    let updated: TrackerProjectRecord | null
    try {
      updated = await this.records.findOneAndUpdate({ _id: current._id, version: current.version, deletedAt: null }, update, { returnDocument: 'after' })
    } catch (error) {
      if (error instanceof DuplicateKeyError) throw trackerErrors.identifierTaken({ identifier: String((update.$set as { identifier?: string }).identifier ?? '') })
      throw error
    }
    if (updated === null) throw trackerErrors.changed({ what: 'tracker project' })
    return updated
  }
}
