import type { Clock } from '../platform/clock.js'
import type { Cursors } from '../collections/query.js'
import type { FileStore } from '../files/file-store.js'
import type { UploadSessions } from '../files/uploads.js'
import type { IdGenerator } from '../platform/ids.js'
import type { SignedLinks } from '../platform/signed-links.js'
import type { Store } from '../store/types.js'
import type { TrackerActor } from './access.js'
import { TrackerAnalytics } from './analytics.js'
import { TrackerExports } from './exports.js'
import { ItemActivity } from './activity.js'
import { TrackerAttachments } from './attachments.js'
import { TrackerAutomations } from './automations.js'
import { TrackerComments } from './comments.js'
import { TrackerCycles } from './cycles.js'
import { TrackerEstimates } from './estimates.js'
import { TrackerFlows } from './flows.js'
import { FollowUps, type FollowUpQueue } from './follow-ups.js'
import { Idempotency } from './idempotency.js'
import { TrackerIntake } from './intake.js'
import { TrackerIssueTypes } from './issue-types.js'
import { ItemLists } from './item-lists.js'
import { ItemRules } from './item-rules.js'
import { ItemStore } from './item-store.js'
import type { ItemRecord, OutboxChange } from './records.js'
import { TrackerLabels } from './labels.js'
import { TrackerLinks } from './links.js'
import { TrackerMembers, type CanUseTracker } from './members.js'
import { TrackerModules } from './modules.js'
import { TrackerNotifications } from './notifications.js'
import { TrackerPages } from './pages.js'
import { Progress } from './progress.js'
import { TrackerProjects } from './projects.js'
import { TrackerRelations } from './relations.js'
import { TrackerSearch } from './search.js'
import { TrackerStates } from './states.js'
import { TrackerViews } from './views.js'
import { WorkItems } from './work-items.js'
import { TrackerDrafts } from './drafts.js'
import { TrackerPersonal } from './personal.js'
import { TrackerWorkspace, type PlatformMembers } from './workspace.js'
import { TrackerWorkspaceViews } from './workspace-views.js'
import { AppError } from '../platform/errors.js'

export { TRACKER_FOLLOW_UP_JOB } from './follow-ups.js'
export { TRACKER_DAILY_JOB, TRACKER_DAILY_EVERY_MS } from './automations.js'
export type { TrackerActor, TrackerScope } from './access.js'
export { rebuildTrackerTextIndexes } from './search.js'
export { TRACKER_EXPORT_JOB, TRACKER_EXPORT_SWEEP_JOB, TRACKER_EXPORT_SWEEP_EVERY_MS } from './exports.js'

/** The ports the tracker family is built from; plugins/tracker.ts passes the app's. */
export interface TrackerPorts {
  store: Store
  clock: Clock
  newId: IdGenerator
  /** Sealed keyset cursors (the collections API's mechanism), under a key of the tracker's own. */
  cursors: Cursors
  uploads: UploadSessions
  /** Told when an attachment's upload session starts, so the sweep of expired sessions is due after it could expire. */
  sessionStarted?: () => Promise<void>
  /** The durable job queue: follow-ups are delayed jobs of type TRACKER_FOLLOW_UP_JOB. */
  jobs: FollowUpQueue
  canUseTracker: CanUseTracker
  /**
   * Item writes' changes to the webhook engine (the plugin): whether the platform project has a tracker webhook
   * at all, asked first, and the publish of one change, given the identifier its key is made of.
   */
  itemWebhooks?: {
    subscribed: (projectId: string) => Promise<boolean>
    publish: (item: ItemRecord, change: OutboxChange, identifier: string) => Promise<void>
  }
  /** Exports: where their files go, what signs their download links, and the path a link points at. */
  exportFiles: FileStore
  exportLinks: SignedLinks
  exportPath: (projectId: string, exportId: string) => string
  /** A user's platform permissions in the platform project now (an export job re-checks access when it runs). */
  actorFor: (projectId: string, userId: string) => Promise<TrackerActor>
  /** The platform project's users who may use the tracker (workspace members). */
  platformMembers: PlatformMembers
}

export interface TrackerServices {
  projects: TrackerProjects
  members: TrackerMembers
  states: TrackerStates
  labels: TrackerLabels
  issueTypes: TrackerIssueTypes
  estimates: TrackerEstimates
  workItems: WorkItems
  lists: ItemLists
  comments: TrackerComments
  links: TrackerLinks
  relations: TrackerRelations
  activity: ItemActivity
  attachments: TrackerAttachments
  cycles: TrackerCycles
  modules: TrackerModules
  views: TrackerViews
  intake: TrackerIntake
  pages: TrackerPages
  automations: TrackerAutomations
  flows: TrackerFlows
  followUps: FollowUps
  notifications: TrackerNotifications
  exports: TrackerExports
  analytics: TrackerAnalytics
  workspace: TrackerWorkspace
  personal: TrackerPersonal
  drafts: TrackerDrafts
  workspaceViews: TrackerWorkspaceViews
  search: TrackerSearch
}

/** Builds the tracker's services on their ports, connects them and creates their indexes. */
export async function buildTrackerServices (deps: TrackerPorts): Promise<TrackerServices> {
  const { store, clock, newId, cursors } = deps
  const followUps = new FollowUps(deps.jobs)
  const idempotency = new Idempotency(store, { clock, newId })
  const members = new TrackerMembers(store, { clock, cursors, canUseTracker: deps.canUseTracker })
  const projects = new TrackerProjects(store, { clock, newId, cursors, members, followUps })
  const states = new TrackerStates(store, { clock, newId, cursors, projects, followUps })
  const labels = new TrackerLabels(store, { clock, newId, cursors, followUps })
  const { itemWebhooks } = deps
  const notifications = new TrackerNotifications(store, { clock, cursors })
  const items = new ItemStore(store, {
    clock,
    newId,
    notify: async (item, change) => { await notifications.itemChanged(item, change) },
    // Most projects have no tracker webhook: nothing is read or built for an event nobody is sent.
    publish: itemWebhooks === undefined
      ? undefined
      : async (item, change) => {
        if (!await itemWebhooks.subscribed(item.projectId)) return
        const project = await projects.record(item.lpId)
        if (project !== null) await itemWebhooks.publish(item, change, project.identifier)
      }
  })
  const countItems = async (filter: Record<string, unknown>): Promise<number> => await items.items.countDocuments({ deletedAt: null, ...filter })
  const issueTypes = new TrackerIssueTypes(store, { clock, newId, cursors, itemsOfType: async (lpId, typeId) => await countItems({ lpId, typeId }) })
  const estimates = new TrackerEstimates(store, { clock, newId, cursors, itemsWithPoints: async (lpId, pointIds) => await countItems({ lpId, estimatePointId: { $in: pointIds } }) })
  const rules = new ItemRules({ items, states, labels, members, estimates, issueTypes })
  const workItems = new WorkItems({ clock, items, rules, states, projects, idempotency, followUps })
  const progress = new Progress({ clock, items })
  const cycles = new TrackerCycles(store, { clock, newId, cursors, progress, followUps })
  const modules = new TrackerModules(store, { clock, newId, cursors, members, progress, followUps })
  const views = new TrackerViews(store, { clock, newId, cursors })
  const lists = new ItemLists({
    clock,
    items,
    states,
    cursors,
    memberIds: async (lpId) => (await members.records.find({ lpId }, { sort: { _id: 1 }, projection: { userId: 1 } }).toArray()).map((member) => member.userId),
    domain: async (lpId, field) => {
      if (field === 'cycle') return await cycles.ids(lpId)
      if (field === 'module') return await modules.ids(lpId)
      const source = field === 'label' ? labels.records : issueTypes.records
      return (await source.find({ lpId }, { sort: { _id: 1 }, projection: { _id: 1 } }).toArray()).map((record) => record._id)
    }
  })
  const comments = new TrackerComments(store, { clock, newId, cursors, items, workItems, members, followUps, guestsSeeAll: async (lpId) => (await projects.record(lpId))?.guestsSeeAllItems ?? false, notify: async (change) => { await notifications.fanOut(change) } })
  const links = new TrackerLinks(store, { clock, newId, cursors, items, workItems, followUps })
  const relations = new TrackerRelations(store, { clock, newId, cursors, items, workItems, followUps })
  const activity = new ItemActivity({ clock, cursors, items, workItems, members })
  const attachments = new TrackerAttachments(store, { clock, cursors, uploads: deps.uploads, sessionStarted: deps.sessionStarted, items, workItems, followUps })
  const intake = new TrackerIntake({ clock, cursors, items, workItems })
  const pages = new TrackerPages(store, { clock, newId, cursors, followUps })
  const automations = new TrackerAutomations({ clock, projects, states, workItems, idempotency })
  const flows = new TrackerFlows({ clock, followUps, projects, states, labels, issueTypes, estimates, items, workItems, lists, comments, links, relations, activity, attachments, cycles, modules, views, pages, notifications })
  projects.connect(flows.settingsPort())
  rules.connect({
    checkCycleMove: async (scope, from, to, path) => { await cycles.checkMove(scope, from, to, path) },
    checkModules: async (scope, ids, path) => { await modules.checkIds(scope, ids, path) }
  })
  lists.connect(async (scope, viewId) => await views.apply(scope, viewId))
  const exports = new TrackerExports(store, {
    clock,
    newId,
    cursors,
    files: deps.exportFiles,
    jobs: deps.jobs,
    lists,
    links: deps.exportLinks,
    scopeOf: async (projectId, userId, lpId) => await projects.scope(await deps.actorFor(projectId, userId), projectId, lpId),
    downloadPath: deps.exportPath
  })
  const analytics = new TrackerAnalytics({ clock, items, lists, scopeOf: async (actor, projectId, lpId) => await projects.scope(actor, projectId, lpId) })
  const search = new TrackerSearch({ store, clock, cursors, projects, members, lists })
  const workspace = new TrackerWorkspace(store, { clock, cursors, items, members, progress, platformMembers: deps.platformMembers })
  const readers = { view: views, cycle: cycles, module: modules, page: pages }
  const personal = new TrackerPersonal(store, {
    clock,
    newId,
    cursors,
    workspace,
    // What the caller may read is what the service's own read answers; a refusal (404, 403) means no.
    canRead: async (scope, kind, entityId) => {
      try {
        await readers[kind].get(scope, entityId)
        return true
      } catch (error) {
        if (error instanceof AppError && error.status < 500) return false
        throw error
      }
    }
  })
  const drafts = new TrackerDrafts(store, { clock, newId, cursors, workspace, workItems })
  const workspaceViews = new TrackerWorkspaceViews(store, { clock, newId, cursors, workspace, items })
  for (const part of [personal, drafts, workspaceViews]) await part.init()
  for (const part of [idempotency, members, projects, states, labels, items, issueTypes, estimates, cycles, modules, views, comments, links, relations, attachments, pages, notifications, exports, search]) await part.init()
  return { projects, members, states, labels, issueTypes, estimates, workItems, lists, comments, links, relations, activity, attachments, cycles, modules, views, intake, pages, automations, flows, followUps, notifications, exports, analytics, workspace, personal, drafts, workspaceViews, search }
}
