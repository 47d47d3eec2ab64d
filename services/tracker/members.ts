import type { Clock } from '../platform/clock.js'
import { isoString } from '../platform/iso-dates.js'
import { DuplicateKeyError } from '../store/errors.js'
import type { SharedReads, Store, StoreCollection } from '../store/types.js'
import { TRACKER_LIMITS, type TrackerMemberT, type TrackerRoleT } from '../../schemas/tracker.js'
import { requireAdmin, requireWritable, type TrackerScope } from './access.js'
import { trackerErrors } from './errors.js'
import { keysetPage, listScope, sortPlan, type PageRequest } from './paging.js'
import type { Cursors } from '../collections/query.js'
import { TRACKER_COLLECTIONS, type MemberRecord } from './records.js'
import type { PageOf } from '../../schemas/tracker.js'

/** Whether a platform user may use the tracker of a platform project at all (`tracker.read` there): who may become a member. */
export type CanUseTracker = (projectId: string, userId: string) => Promise<boolean>

export const memberId = (lpId: string, userId: string): string => `${lpId}:${userId}`
const ORDER = sortPlan([['_id', 1]])

function toView (record: MemberRecord): TrackerMemberT {
  return { userId: record.userId, role: record.role, createdAt: isoString(record.createdAt), updatedAt: isoString(record.updatedAt) }
}

/**
 * Members of tracker projects and their roles. A membership's id is
 * `<lpId>:<userId>`, so the role of a caller is one primary-key read and a
 * user is a member once.
 */
export class TrackerMembers {
  readonly records: StoreCollection<MemberRecord>
  // Every scope asks a member's role: read shared, from the Store's document cache while the member is unchanged.
  private readonly shared: SharedReads<MemberRecord>

  constructor (store: Store, private readonly deps: { clock: Clock, cursors: Cursors, canUseTracker: CanUseTracker }) {
    this.records = store.collection<MemberRecord>(TRACKER_COLLECTIONS.members)
    this.shared = store.extensions.shared<MemberRecord>(TRACKER_COLLECTIONS.members)
  }

  async init (): Promise<void> {
    await this.records.createIndex({ lpId: 1, _id: 1 })
    await this.records.createIndex({ projectId: 1, userId: 1 })
  }

  async canUse (projectId: string, userId: string): Promise<boolean> {
    return await this.deps.canUseTracker(projectId, userId)
  }

  async roleOf (lpId: string, userId: string): Promise<TrackerRoleT | null> {
    return (await this.shared.findOne({ _id: memberId(lpId, userId) }))?.role ?? null
  }

  /** The tracker projects a user is an explicit member of, in one platform project. */
  async projectsOf (projectId: string, userId: string): Promise<string[]> {
    return (await this.records.find({ projectId, userId }, { projection: { lpId: 1 } }).toArray()).map((record) => record.lpId)
  }

  /** The members' records written before their project (see TrackerProjects.create). */
  seedRecord (projectId: string, lpId: string, userId: string, role: TrackerRoleT): MemberRecord {
    const now = this.deps.clock.now()
    return { _id: memberId(lpId, userId), projectId, lpId, userId, role, createdAt: now, updatedAt: now }
  }

  async seed (records: MemberRecord[]): Promise<void> {
    await this.records.insertMany(records)
  }

  async list (scope: TrackerScope, page: PageRequest): Promise<PageOf<TrackerMemberT>> {
    const lpId = scope.project._id
    const { docs, nextCursor } = await keysetPage(this.records, { lpId }, ORDER, page, this.deps.cursors, listScope(scope.projectId, `members:${lpId}`, null, ORDER))
    return { items: docs.map(toView), nextCursor }
  }

  async add (scope: TrackerScope, input: { userId: string, role: TrackerRoleT }): Promise<TrackerMemberT> {
    requireAdmin(scope)
    requireWritable(scope)
    if (!(await this.canUse(scope.projectId, input.userId))) {
      throw trackerErrors.notAMember({ path: 'body.userId', problem: `${input.userId} cannot use this platform project's tracker (tracker.read)` })
    }
    if (await this.records.countDocuments({ lpId: scope.project._id }) >= TRACKER_LIMITS.membersPerProject) throw trackerErrors.limitReached({ what: 'tracker project', limit: TRACKER_LIMITS.membersPerProject, items: 'members' })
    const record = this.seedRecord(scope.projectId, scope.project._id, input.userId, input.role)
    try {
      await this.records.insertOne(record)
    } catch (error) {
      if (error instanceof DuplicateKeyError) throw trackerErrors.alreadyMember({ userId: input.userId })
      throw error
    }
    return toView(record)
  }

  async update (scope: TrackerScope, userId: string, role: TrackerRoleT): Promise<TrackerMemberT> {
    requireAdmin(scope)
    requireWritable(scope)
    const updated = await this.records.findOneAndUpdate({ _id: memberId(scope.project._id, userId) }, { $set: { role, updatedAt: this.deps.clock.now() } }, { returnDocument: 'after' })
    if (updated === null) throw trackerErrors.memberNotFound()
    return toView(updated)
  }

  /** Their assignments stay; they may no longer be given new ones. */
  async remove (scope: TrackerScope, userId: string): Promise<void> {
    requireAdmin(scope)
    requireWritable(scope)
    const { deletedCount } = await this.records.deleteOne({ _id: memberId(scope.project._id, userId) })
    if (deletedCount === 0) throw trackerErrors.memberNotFound()
  }

  /** 400 naming the first of `userIds` that is not a member (any role) of the tracker project; `path` names a list (`body.assigneeIds`) or, with one id, a field. */
  async requireMembers (lpId: string, userIds: readonly string[], path: string, list = true): Promise<void> {
    const wanted = [...new Set(userIds)]
    if (wanted.length === 0) return
    const found = new Set((await this.records.find({ _id: { $in: wanted.map((userId) => memberId(lpId, userId)) } }, { projection: { userId: 1 } }).toArray()).map((record) => record.userId))
    const index = userIds.findIndex((userId) => !found.has(userId))
    if (index >= 0) {
      const at = list ? `${path}[${index}]` : path
      throw trackerErrors.notAMember({ path: at, problem: `${userIds[index]} is not a member of this tracker project` })
    }
  }

  /**
   * Which of the mentioned `userIds` a mention subscribes: members who can
   * see the item (a guest only if `guestSees` says so). Anyone else is
   * subscribed to nothing, so no notification ever tells them of it.
   */
  async mentionable (lpId: string, userIds: readonly string[], guestSees: (userId: string) => boolean): Promise<string[]> {
    if (userIds.length === 0) return []
    const found = await this.records.find({ _id: { $in: [...new Set(userIds)].map((userId) => memberId(lpId, userId)) } }, { projection: { userId: 1, role: 1 } }).toArray()
    const allowed = new Set(found.filter((record) => record.role !== 'guest' || guestSees(record.userId)).map((record) => record.userId))
    return userIds.filter((userId) => allowed.has(userId))
  }

  async purge (lpId: string): Promise<void> {
    await this.records.deleteMany({ lpId })
  }
}
