import type { Clock } from '../platform/clock.js'
import { AppError } from '../platform/errors.js'
import type { PageOf } from '../../schemas/tracker.js'
import type { BulkItemResultT, BulkPatchResultT, ListWorkItemsQueryT, WorkItemT, WorkItemTombstoneT } from '../../schemas/tracker-work-items.js'
import type { ModuleItemsBodyT, TransferResultT } from '../../schemas/tracker-planning.js'
import { refuseGuest, type TrackerScope } from './access.js'
import type { ItemActivity } from './activity.js'
import type { TrackerAttachments } from './attachments.js'
import type { TrackerComments } from './comments.js'
import { DELETE_CYCLE, TRANSFER_CYCLE, type TrackerCycles } from './cycles.js'
import { trackerErrors } from './errors.js'
import type { TrackerEstimates } from './estimates.js'
import type { FollowUps } from './follow-ups.js'
import type { ItemLists } from './item-lists.js'
import type { ItemStore } from './item-store.js'
import type { TrackerIssueTypes } from './issue-types.js'
import { DELETE_LABEL, type TrackerLabels } from './labels.js'
import type { TrackerLinks } from './links.js'
import { DELETE_MODULE, type TrackerModules } from './modules.js'
import type { TrackerNotifications } from './notifications.js'
import { DELETE_PAGE, type TrackerPages } from './pages.js'
import type { ProjectSettingsPort, TrackerProjects } from './projects.js'
import type { TrackerRelations } from './relations.js'
import { DELETE_STATE, type TrackerStates } from './states.js'
import type { TrackerViews } from './views.js'
import { DELETE_ITEM, type WorkItems } from './work-items.js'

export const SWITCH_ESTIMATE = 'estimateSwitch'
const without = (list: string[], id: string): string[] => list.filter((value) => value !== id)

export interface FlowDeps {
  clock: Clock
  followUps: FollowUps
  projects: TrackerProjects
  states: TrackerStates
  labels: TrackerLabels
  issueTypes: TrackerIssueTypes
  estimates: TrackerEstimates
  items: ItemStore
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
  pages: TrackerPages
  notifications?: Pick<TrackerNotifications, 'purge'>
}

/**
 * What spans services: the follow-ups that finish a delete (items let go of
 * a state, label, cycle or module; what hung off a deleted item goes), a
 * cycle transfer, an estimate switch and a project's purge, and the item
 * memberships of cycles and modules. Every follow-up is idempotent: the job
 * that guards it runs it again later and finds nothing left to do.
 */
export class TrackerFlows {
  constructor (private readonly deps: FlowDeps) {
    const { followUps } = deps
    followUps.on(DELETE_STATE, async (task) => { await this.finishStateDelete(String(task.lpId), String(task.stateId), task.targetStateId as string | null) })
    followUps.on(DELETE_LABEL, async (task) => { await this.finishLabelDelete(String(task.lpId), String(task.labelId)) })
    followUps.on(DELETE_ITEM, async (task) => { await this.finishItemDelete(String(task.lpId), String(task.itemId)) })
    followUps.on(DELETE_CYCLE, async (task) => { await this.finishCycleDelete(String(task.lpId), String(task.cycleId)) })
    followUps.on(TRANSFER_CYCLE, async (task) => await this.moveUnfinished(String(task.lpId), String(task.from), String(task.to), String(task.actorId)))
    followUps.on(DELETE_MODULE, async (task) => { await this.finishModuleDelete(String(task.lpId), String(task.moduleId)) })
    followUps.on(DELETE_PAGE, async (task) => { await deps.pages.removeRest(String(task.lpId), String(task.pageId)) })
    followUps.on(SWITCH_ESTIMATE, async (task) => { await this.clearForeignEstimates(String(task.lpId)) })
  }

  /** The port TrackerProjects asks its settings through. */
  settingsPort (): ProjectSettingsPort {
    const { states, estimates, followUps } = this.deps
    return {
      seedStates: async (projectId, lpId) => await states.seed(projectId, lpId),
      checkState: async (lpId, stateId, path, group) => { await states.usable(lpId, stateId, path, { group }) },
      checkEstimate: async (lpId, estimateId, path) => { await estimates.requireExists(lpId, estimateId, path) },
      estimateSwitched: async (scope) => { await followUps.guard({ kind: SWITCH_ESTIMATE, lpId: scope.project._id }) },
      purge: async (projectId, lpId) => { await this.purge(projectId, lpId) }
    }
  }

  async deleteState (scope: TrackerScope, stateId: string, targetStateId?: string): Promise<void> {
    await this.deps.states.delete(scope, stateId, targetStateId, async (lpId, id) => await this.deps.items.items.countDocuments({ lpId, stateId: id, deletedAt: null }))
  }

  /** The items of a cycle, as the work item list gives them (filter, order, cursor), narrowed to the cycle. */
  async cycleItems (scope: TrackerScope, cycleId: string, query: ListWorkItemsQueryT): Promise<PageOf<WorkItemT | WorkItemTombstoneT>> {
    await this.deps.cycles.get(scope, cycleId)
    return await this.deps.lists.list(scope, query, { field: 'cycle', op: 'eq', value: cycleId })
  }

  /** The items of a module, likewise. */
  async moduleItems (scope: TrackerScope, moduleId: string, query: ListWorkItemsQueryT): Promise<PageOf<WorkItemT | WorkItemTombstoneT>> {
    await this.deps.modules.get(scope, moduleId)
    return await this.deps.lists.list(scope, query, { field: 'module', op: 'eq', value: moduleId })
  }

  /** Items into a cycle, each as a single PATCH of `cycleId` would, each answered on its own. */
  async addToCycle (scope: TrackerScope, cycleId: string, itemIds: string[]): Promise<BulkPatchResultT> {
    await this.deps.cycles.get(scope, cycleId)
    return await this.deps.workItems.bulkPatch(scope, { ids: itemIds, patch: { cycleId } })
  }

  async removeFromCycle (scope: TrackerScope, cycleId: string, itemId: string): Promise<void> {
    await this.deps.cycles.get(scope, cycleId)
    const item = await this.deps.workItems.visible(scope, itemId)
    if (item.cycleId !== cycleId) throw trackerErrors.itemNotFound()
    await this.deps.workItems.update(scope, itemId, { cycleId: null })
  }

  async transfer (scope: TrackerScope, cycleId: string, targetCycleId: string): Promise<TransferResultT> {
    return await this.deps.cycles.transfer(scope, cycleId, targetCycleId)
  }

  /** Items join and leave a module, each with its own write and result. */
  async setModuleItems (scope: TrackerScope, moduleId: string, input: ModuleItemsBodyT): Promise<BulkPatchResultT> {
    refuseGuest(scope, 'use modules')
    const { add, remove } = await this.deps.modules.itemChanges(scope, moduleId, input)
    const results: BulkItemResultT[] = []
    for (const [ids, joining] of [[add, true], [remove, false]] as const) {
      for (const id of ids) {
        try {
          const item = await this.deps.workItems.visible(scope, id)
          const moduleIds = joining ? [...without(item.moduleIds, moduleId), moduleId] : without(item.moduleIds, moduleId)
          const updated = await this.deps.workItems.update(scope, id, { moduleIds }, { ifMatch: undefined })
          results.push({ id, status: 200, key: updated.key, version: updated.version, code: null, message: null })
        } catch (error) {
          if (!(error instanceof AppError) || error.status >= 500) throw error
          results.push({ id, status: error.status, key: null, version: null, code: error.code, message: error.message })
        }
      }
    }
    const patched = results.filter((result) => result.status === 200).length
    return { results, patched, failed: results.length - patched }
  }

  /** Marks the state, hands the default over, moves its items (archived ones too), then deletes it. */
  private async finishStateDelete (lpId: string, stateId: string, targetStateId: string | null): Promise<void> {
    const project = await this.deps.projects.record(lpId)
    if (project === null || project.deletedAt !== null) return
    let target = await this.deps.states.find(lpId, targetStateId ?? project.defaultStateId)
    if (target === null || target.deletingTo !== null || target._id === stateId) target = await this.deps.states.firstOfGroup(lpId, 'backlog')
    if (target === null) return
    const into = target
    await this.deps.states.markDeleting(lpId, stateId, into._id)
    await this.deps.projects.replaceDefaultState(lpId, stateId, into._id)
    const now = this.deps.clock.now()
    await this.deps.workItems.rewriteAll(lpId, { stateId }, (item) => item.stateId !== stateId
      ? null
      : {
          set: { stateId: into._id, stateGroup: into.group, completedAt: into.group !== 'completed' ? null : item.stateGroup === 'completed' ? item.completedAt : now },
          entries: [{ field: 'state', from: stateId, to: into._id }, ...(item.stateGroup === into.group ? [] : [{ field: 'stateGroup', from: item.stateGroup, to: into.group }])]
        })
    await this.deps.states.remove(lpId, stateId)
  }

  private async finishLabelDelete (lpId: string, labelId: string): Promise<void> {
    await this.deps.labels.remove(lpId, labelId)
    await this.deps.workItems.rewriteAll(lpId, { labelIds: labelId }, (item) => item.labelIds.includes(labelId)
      ? { set: { labelIds: without(item.labelIds, labelId) }, entries: [{ field: 'labels', from: item.labelIds, to: without(item.labelIds, labelId) }] }
      : null)
  }

  /** Sub-items lose their parent; comments, reactions, links, relations, attachments and subscriptions go. The activity stays. */
  private async finishItemDelete (lpId: string, itemId: string): Promise<void> {
    const item = await this.deps.items.items.findOne({ _id: itemId, lpId })
    if (item === null || item.deletedAt === null) return
    await this.deps.workItems.rewriteAll(lpId, { parentId: itemId }, (child) => child.parentId === itemId ? { set: { parentId: null }, entries: [{ field: 'parent', from: itemId, to: null }] } : null)
    await this.deps.relations.purgeItem(itemId)
    await this.deps.comments.purgeItem(itemId)
    await this.deps.links.purgeItem(itemId)
    await this.deps.attachments.purgeItem(item)
    await this.deps.activity.purgeItem(itemId)
  }

  private async finishCycleDelete (lpId: string, cycleId: string): Promise<void> {
    await this.deps.workItems.rewriteAll(lpId, { cycleId }, (item) => item.cycleId === cycleId ? { set: { cycleId: null }, entries: [{ field: 'cycle', from: cycleId, to: null }] } : null)
    await this.deps.cycles.remove(lpId, cycleId)
  }

  /** A transfer's moves, as the person who asked: unfinished items of `from` into `to` (if `to` is still there). */
  private async moveUnfinished (lpId: string, from: string, to: string, actorId: string): Promise<number> {
    if (await this.deps.cycles.live(lpId, to) === null) return 0
    return await this.deps.workItems.rewriteAll(lpId, { cycleId: from, stateGroup: { $nin: ['completed', 'cancelled'] } }, (item) => item.cycleId === from && item.stateGroup !== 'completed' && item.stateGroup !== 'cancelled'
      ? { set: { cycleId: to }, entries: [{ field: 'cycle', from, to }] }
      : null, actorId)
  }

  private async finishModuleDelete (lpId: string, moduleId: string): Promise<void> {
    await this.deps.workItems.rewriteAll(lpId, { moduleIds: moduleId }, (item) => item.moduleIds.includes(moduleId)
      ? { set: { moduleIds: without(item.moduleIds, moduleId) }, entries: [{ field: 'modules', from: item.moduleIds, to: without(item.moduleIds, moduleId) }] }
      : null)
    await this.deps.modules.remove(lpId, moduleId)
  }

  /** After the project switched estimate systems: items holding a point of another lose their estimate. */
  private async clearForeignEstimates (lpId: string): Promise<void> {
    const project = await this.deps.projects.record(lpId)
    if (project === null) return
    const points = await this.deps.estimates.pointIds(lpId, project.estimateId)
    await this.deps.workItems.rewriteAll(lpId, { estimatePointId: { $ne: null, $nin: points } }, (item) => item.estimatePointId === null || points.includes(item.estimatePointId)
      ? null
      : { set: { estimatePointId: null, estimate: null }, entries: [{ field: 'estimatePoint', from: item.estimatePointId, to: null }, { field: 'estimate', from: item.estimate, to: null }] })
  }

  /** Everything of a tracker project but its document, members and counter (TrackerProjects ends with those). */
  private async purge (projectId: string, lpId: string): Promise<void> {
    const { deps } = this
    await deps.attachments.purge(projectId, lpId)
    for (const service of [deps.comments, deps.links, deps.relations, deps.views, deps.pages, deps.modules, deps.cycles, deps.labels, deps.issueTypes, deps.estimates, deps.items, deps.states]) {
      await service.purge(lpId)
    }
    await deps.notifications?.purge(lpId)
  }
}
