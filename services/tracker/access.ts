import type { Filter } from '../store/types.js'
import type { TrackerRoleT } from '../../schemas/tracker.js'
import { trackerErrors } from './errors.js'
import type { TrackerProjectRecord } from './records.js'

/**
 * Who is acting, as the routes hand it to the tracker services: the platform
 * user and the permissions the one resolver gave them in the platform
 * project. The routes check `tracker.read|write|admin` per operation; the
 * services add the tracker project's own roles on top.
 */
export interface TrackerActor {
  userId: string
  /** Effective platform permissions in the platform project (`tracker.read`, `tracker.write`, `tracker.admin`, …). */
  permissions: readonly string[]
}

/** The id automations act as in activity entries. */
export const AUTOMATION_ACTOR = 'automation'

/**
 * A tracker project as one caller may use it: what a route's parent resolver
 * loads once (`request.scope`) and every tracker service method takes.
 */
export interface TrackerScope {
  actor: TrackerActor
  projectId: string
  project: TrackerProjectRecord
  role: TrackerRoleT
  /** Whether the caller sees every item; a guest of a project that does not let guests see all sees only theirs. */
  seesAllItems: boolean
}

/**
 * The caller's role in a tracker project, or null when they may not see it:
 * `tracker.admin` makes anyone an admin of every tracker project; otherwise
 * an explicit membership decides, and a public project takes non-members as
 * members.
 */
export function roleIn (actor: TrackerActor, project: TrackerProjectRecord, membership: TrackerRoleT | null): TrackerRoleT | null {
  if (!actor.permissions.includes('tracker.read')) return null
  if (actor.permissions.includes('tracker.admin')) return 'admin'
  if (membership !== null) return membership
  return project.visibility === 'public' ? 'member' : null
}

export function requireAdmin (scope: TrackerScope): void {
  if (scope.role !== 'admin') throw trackerErrors.roleRequired({ role: 'admin' })
}

/** Refuses guests what only members and admins may do. */
export function refuseGuest (scope: TrackerScope, action: string): void {
  if (scope.role === 'guest') throw trackerErrors.guestRefused({ action })
}

/** Every write to a tracker project first: an archived project is read-only. */
export function requireWritable (scope: TrackerScope): void {
  if (scope.project.archivedAt !== null) throw trackerErrors.projectArchived()
}

export function requireFeature (scope: TrackerScope, feature: keyof TrackerProjectRecord['features']): void {
  if (!scope.project.features[feature]) throw trackerErrors.featureDisabled({ feature: feature[0].toUpperCase() + feature.slice(1) })
}

/**
 * The items a caller may see, as a Store filter ANDed into every item query:
 * a guest's own (created or assigned) unless the project lets guests see
 * all, and drafts only to their creators.
 */
export function visibleItems (scope: TrackerScope, options: { draftsExcluded?: boolean } = {}): Filter {
  const me = scope.actor.userId
  // A query that keeps drafts out already (`draft: false`) needs no clause of its own for them.
  const drafts: Filter = options.draftsExcluded === true ? {} : { $or: [{ draft: false }, { createdBy: me }] }
  if (scope.seesAllItems) return drafts
  const own: Filter = { $or: [{ createdBy: me }, { assignees: me }] }
  return options.draftsExcluded === true ? own : { $and: [drafts, own] }
}

/** The same rule for one item in memory. */
export function canSeeItem (scope: TrackerScope, item: { draft: boolean, createdBy: string, assignees: string[] }): boolean {
  const me = scope.actor.userId
  if (item.draft && item.createdBy !== me) return false
  return scope.seesAllItems || item.createdBy === me || item.assignees.includes(me)
}

/** Whether the caller may change what `ownerId` made: its owner, or a project admin. */
export function ownsOrAdmin (scope: TrackerScope, ownerId: string): boolean {
  return scope.role === 'admin' || scope.actor.userId === ownerId
}

/** The actor a route hands the services: the platform user, and the permissions the resolver found they hold in the platform project. */
export function trackerActor (userId: string, permissions: Iterable<string>): TrackerActor {
  return { userId, permissions: [...permissions] }
}
