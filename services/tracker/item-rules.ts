import { FrozenMemo } from '../cache/frozen-memo.js'
import { isoString } from '../platform/iso-dates.js'
import { TRACKER_LIMITS } from '../../schemas/tracker.js'
import { PRIORITIES } from '../../schemas/tracker-filters.js'
import type { CreateWorkItemBodyT, UpdateWorkItemBodyT, WorkItemT, WorkItemTombstoneT } from '../../schemas/tracker-work-items.js'
import { canSeeItem, type TrackerScope } from './access.js'
import { isDay } from './calendar.js'
import { trackerErrors } from './errors.js'
import type { TrackerEstimates } from './estimates.js'
import type { ItemStore } from './item-store.js'
import type { TrackerIssueTypes } from './issue-types.js'
import type { TrackerLabels } from './labels.js'
import type { TrackerMembers } from './members.js'
import type { ActivityEntry, ItemRecord, Subscription } from './records.js'
import type { TrackerStates } from './states.js'
import { richText } from './text.js'

/** What a patch does to an item: the fields to set, one activity entry per changed field, the people to subscribe. */
export interface ItemPlan { set: Partial<ItemRecord>, entries: ActivityEntry[], subscribe: Subscription[] }

/** The planning parts' say over items, connected once they exist (services/tracker/index.ts). */
export interface PlanningRules {
  /** 400 unless the cycle may take items; 409 when an item would leave or enter a completed cycle. */
  checkCycleMove: (scope: TrackerScope, from: string | null, to: string | null, path: string) => Promise<void>
  checkModules: (scope: TrackerScope, moduleIds: string[], path: string) => Promise<void>
}

/** Every field a create or a patch may set (a create may make a draft; a patch may only publish one). */
export type PlanInput = Omit<Partial<CreateWorkItemBodyT> & UpdateWorkItemBodyT, 'draft' | 'position'> & { draft?: boolean }

export const priorityRank = (priority: ItemRecord['priority']): number => PRIORITIES.indexOf(priority)
export const itemKey = (identifier: string, seq: number): string => `${identifier}-${seq}`
const sameList = (a: readonly string[], b: readonly string[]): boolean => a.length === b.length && a.every((value, index) => value === b[index])

export function toItemView (record: ItemRecord, identifier: string): WorkItemT {
  return {
    id: record._id,
    key: itemKey(identifier, record.seq),
    number: record.seq,
    trackerProjectId: record.lpId,
    title: record.title,
    descriptionFormat: record.descriptionFormat,
    description: record.description,
    descriptionJson: record.descriptionJson,
    descriptionText: record.descriptionText,
    stateId: record.stateId,
    stateGroup: record.stateGroup,
    priority: record.priority,
    assigneeIds: record.assignees,
    labelIds: record.labelIds,
    parentId: record.parentId,
    startDate: record.startDate,
    targetDate: record.targetDate,
    estimatePointId: record.estimatePointId,
    estimate: record.estimate,
    typeId: record.typeId,
    cycleId: record.cycleId,
    moduleIds: record.moduleIds,
    sortOrder: record.sortOrder,
    archivedAt: record.archivedAt === null ? null : isoString(record.archivedAt),
    draft: record.draft,
    completedAt: record.completedAt === null ? null : isoString(record.completedAt),
    intake: record.intake === null
      ? null
      : {
          // Field by field: a list writes its views as they are (plugins/fast-json.ts), so only the schema's fields go in.
          status: record.intake.status,
          snoozedUntil: record.intake.snoozedUntil === null ? null : isoString(record.intake.snoozedUntil),
          duplicateOfId: record.intake.duplicateOfId,
          source: record.intake.source,
          decidedBy: record.intake.decidedBy,
          decidedAt: record.intake.decidedAt === null ? null : isoString(record.intake.decidedAt)
        },
    createdBy: record.createdBy,
    updatedBy: record.updatedBy,
    createdAt: isoString(record.createdAt),
    updatedAt: isoString(record.updatedAt),
    version: record.version
  }
}

const sharedViews = new FrozenMemo(toItemView)

/**
 * The view of an item read shared (a frozen document of the Store's cache):
 * made once per stored state and identifier and frozen in turn, so a list
 * route writes its JSON text once too (plugins/fast-json.ts). A document not
 * frozen gets a fresh view.
 */
export function sharedItemView (record: ItemRecord, identifier: string): WorkItemT {
  return sharedViews.get(record, identifier)
}

export function toTombstoneView (record: ItemRecord, identifier: string): WorkItemTombstoneT {
  return { id: record._id, key: itemKey(identifier, record.seq), number: record.seq, deleted: true, deletedAt: isoString(record.deletedAt as Date), updatedAt: isoString(record.updatedAt) }
}

/**
 * Turns a create or patch body into an ItemPlan, checking every reference
 * against the project: states, labels, members, estimate points, issue
 * types, parents (no loops), cycles and modules.
 */
export class ItemRules {
  private planning: PlanningRules | null = null

  constructor (private readonly deps: { items: ItemStore, states: TrackerStates, labels: TrackerLabels, members: TrackerMembers, estimates: TrackerEstimates, issueTypes: TrackerIssueTypes }) {}

  connect (planning: PlanningRules): void {
    this.planning = planning
  }

  /** `current` is null for a create, whose body must then hold every field (defaults filled in by the caller). */
  async plan (scope: TrackerScope, current: ItemRecord | null, input: PlanInput, now: Date, options: { triage?: boolean } = {}): Promise<ItemPlan> {
    const lpId = scope.project._id
    const set: Partial<ItemRecord> = {}
    const entries: ActivityEntry[] = []
    const subscribe: Subscription[] = []
    const change = <K extends keyof ItemRecord>(field: K, value: ItemRecord[K], entry: string | null = field): void => {
      const before = current === null ? undefined : current[field]
      const same = Array.isArray(value) && Array.isArray(before) ? sameList(value, before) : before === value
      if (same) return
      set[field] = value
      if (entry !== null && current !== null) entries.push({ field: entry, from: before ?? null, to: value ?? null })
    }
    if (current?.archivedAt != null && input.archived !== false) throw trackerErrors.itemArchived()
    let mentions: string[] = []

    if (input.title !== undefined) {
      const title = input.title.trim()
      if (title === '') throw trackerErrors.invalidValue({ path: 'body.title', problem: 'is blank' })
      change('title', title)
    }
    if (input.description !== undefined || input.descriptionJson !== undefined) {
      const text = richText(input.description, input.descriptionJson, 'body.description')
      if (current === null || text.markdown !== current.description || JSON.stringify(text.json) !== JSON.stringify(current.descriptionJson)) {
        Object.assign(set, { descriptionFormat: text.format, description: text.markdown, descriptionJson: text.json, descriptionText: text.text })
        if (current !== null) entries.push({ field: 'description', from: null, to: null })
        // Only whom this description newly mentions: an edit does not mention (nor subscribe again) who was mentioned before.
        const before = current === null ? [] : richText(current.description, current.descriptionJson, 'description').mentions
        mentions = text.mentions.filter((userId) => !before.includes(userId))
      }
    }
    if (input.stateId !== undefined && input.stateId !== current?.stateId) {
      const state = await this.deps.states.usable(lpId, input.stateId, 'body.stateId', { triage: options.triage })
      change('stateId', state._id, 'state')
      const wasCompleted = current?.stateGroup === 'completed'
      if (current === null || state.group !== current.stateGroup) change('stateGroup', state.group)
      if (state.group !== 'completed') change('completedAt', null, null)
      else if (!wasCompleted) change('completedAt', now, null)
    }
    if (input.priority !== undefined) {
      change('priority', input.priority)
      change('priorityRank', priorityRank(input.priority), null)
    }
    if (input.assigneeIds !== undefined) {
      await this.deps.members.requireMembers(lpId, input.assigneeIds, 'body.assigneeIds')
      change('assignees', input.assigneeIds)
      for (const userId of input.assigneeIds) if (current === null || !current.assignees.includes(userId)) subscribe.push({ userId, reason: 'assignee' })
    }
    if (input.labelIds !== undefined) {
      await this.deps.labels.requireLabels(lpId, input.labelIds, 'body.labelIds')
      change('labelIds', input.labelIds, 'labels')
    }
    if (input.parentId !== undefined && input.parentId !== (current?.parentId ?? null)) {
      if (input.parentId !== null) await this.checkParent(scope, current?._id ?? null, input.parentId)
      change('parentId', input.parentId, 'parent')
    }
    for (const field of ['startDate', 'targetDate'] as const) {
      const value = input[field]
      if (value === undefined) continue
      if (value !== null && !isDay(value)) throw trackerErrors.invalidValue({ path: `body.${field}`, problem: 'is not a day (YYYY-MM-DD)' })
      change(field, value)
    }
    const start = set.startDate !== undefined ? set.startDate : current?.startDate ?? null
    const target = set.targetDate !== undefined ? set.targetDate : current?.targetDate ?? null
    if (start !== null && target !== null && target < start) throw trackerErrors.invalidValue({ path: 'body.targetDate', problem: 'is before startDate' })
    if (input.estimatePointId !== undefined && input.estimatePointId !== (current?.estimatePointId ?? null)) {
      const value = input.estimatePointId === null ? null : await this.deps.estimates.pointValue(lpId, scope.project.estimateId, input.estimatePointId, 'body.estimatePointId')
      change('estimatePointId', input.estimatePointId, 'estimatePoint')
      change('estimate', value)
    }
    if (input.typeId !== undefined && input.typeId !== (current?.typeId ?? null)) {
      if (input.typeId !== null) await this.deps.issueTypes.requireActive(lpId, input.typeId, 'body.typeId')
      change('typeId', input.typeId, 'type')
    }
    if (scope.role === 'guest' && ((input.cycleId !== undefined && input.cycleId !== (current?.cycleId ?? null)) || (input.moduleIds !== undefined && !sameList(input.moduleIds, current?.moduleIds ?? [])))) {
      throw trackerErrors.guestRefused({ action: 'put items in cycles or modules' })
    }
    if (input.cycleId !== undefined && input.cycleId !== (current?.cycleId ?? null)) {
      await this.rules.checkCycleMove(scope, current?.cycleId ?? null, input.cycleId, 'body.cycleId')
      change('cycleId', input.cycleId, 'cycle')
    }
    if (input.moduleIds !== undefined) {
      await this.rules.checkModules(scope, input.moduleIds, 'body.moduleIds')
      change('moduleIds', input.moduleIds, 'modules')
    }
    if (input.sortOrder !== undefined) {
      if (!Number.isFinite(input.sortOrder)) throw trackerErrors.invalidValue({ path: 'body.sortOrder', problem: 'must be a finite number' })
      change('sortOrder', input.sortOrder, null)
    }
    if (input.draft !== undefined) {
      if (current !== null && input.draft && !current.draft) throw trackerErrors.invalidValue({ path: 'body.draft', problem: 'a published item cannot become a draft again' })
      change('draft', input.draft)
    }
    if (input.archived !== undefined && current !== null && input.archived !== (current.archivedAt !== null)) {
      const group = set.stateGroup ?? current.stateGroup
      if (input.archived && group !== 'completed' && group !== 'cancelled') throw trackerErrors.archiveOpenItem()
      set.archivedAt = input.archived ? now : null
      entries.push({ field: 'archived', from: !input.archived, to: input.archived })
    }
    if (mentions.length > 0) {
      // A guest is subscribed only to what she can see: her own items, those she is assigned, or all where the project says so.
      const assignees = set.assignees ?? current?.assignees ?? []
      const creator = current?.createdBy ?? scope.actor.userId
      const guestSees = (userId: string): boolean => scope.project.guestsSeeAllItems || userId === creator || assignees.includes(userId)
      for (const userId of await this.deps.members.mentionable(lpId, mentions, guestSees)) subscribe.push({ userId, reason: 'mentioned' })
    }
    return { set, entries, subscribe }
  }

  private get rules (): PlanningRules {
    if (this.planning === null) throw new Error('item rules used before services/tracker/index.ts connected them')
    return this.planning
  }

  /**
   * A parent is a visible item of the project that is not the item nor one of
   * its descendants, no deeper than the limit. Two re-parentings racing could
   * each pass this, so the caller checks again after writing (loopAfterWrite).
   */
  async checkParent (scope: TrackerScope, itemId: string | null, parentId: string): Promise<void> {
    if (parentId === itemId) throw trackerErrors.invalidReference({ path: 'body.parentId', problem: 'is the item itself' })
    const parent = await this.deps.items.find(scope.project._id, parentId)
    if (parent === null || !canSeeItem(scope, parent)) throw trackerErrors.invalidReference({ path: 'body.parentId', problem: 'is not a work item of this tracker project' })
    if (itemId !== null) await this.refuseLoop(scope.project._id, itemId, parent)
  }

  /** 409 when walking up from `parent` meets `itemId`, or goes deeper than the limit. */
  async refuseLoop (lpId: string, itemId: string, parent: ItemRecord): Promise<void> {
    let current: ItemRecord | null = parent
    for (let depth = 1; current !== null; depth++) {
      if (current._id === itemId) throw trackerErrors.parentLoop({ problem: 'The parent is a sub-item of this item' })
      if (depth >= TRACKER_LIMITS.itemDepth) throw trackerErrors.parentLoop({ problem: `Sub-items nest at most ${TRACKER_LIMITS.itemDepth} levels` })
      current = current.parentId === null ? null : await this.deps.items.find(lpId, current.parentId)
    }
  }
}
