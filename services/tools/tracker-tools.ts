import { Type, type TSchema } from '@sinclair/typebox'
import { Deleted, Id } from '../../schemas/common.js'
import {
  AddMemberBody, ListQuery, ListStatesQuery, Page, TrackerLabel, TrackerMember, TrackerState
} from '../../schemas/tracker.js'
import {
  Cycle, CycleItemsBody, IntakeDecisionBody, ListIntakeQuery, Module, ModuleItemsBody, TransferBody, TransferResult
} from '../../schemas/tracker-planning.js'
import { KeyParams } from '../../schemas/tracker-routes.js'
import { SearchQuery, searchResult } from '../../schemas/tracker-search.js'
import {
  BulkItemResult, BulkPatchBody, BulkPatchResult, Comment, CommentBody, CountResult, CountWorkItemsQuery, CreateWorkItemBody,
  Link, LinkBody, ListWorkItemsQuery, Relation, RelationBody, UpdateWorkItemBody, WorkItem, WorkItemTombstone
} from '../../schemas/tracker-work-items.js'
import { AppError } from '../platform/errors.js'
import type { ToolDefinition, ToolRegistry } from './registry.js'
import type { TrackerToolContext } from './tracker-tool-context.js'
import { WORKSPACE_TOOLS } from './tracker-workspace-tools.js'

/** What a tracker tool runs with: the services, and the caller as the resolver sees them at this call. */
const BULK_CREATE_MAX = 100

// The route's path parameters a tool takes as input members; its body or query goes in as the very schema the route validates.
const lpId = Id
const itemId = Id
const cycleId = Id
const moduleId = Id
const inProject = <P extends Record<string, TSchema>>(members: P) => Type.Object({ lpId, ...members }, { additionalProperties: false })

const ItemList = Page(Type.Union([WorkItem, WorkItemTombstone]))
const BulkCreateResult = Type.Object({
  results: Type.Array(BulkItemResult, { description: 'One per item, in the order given: status 201 with its key, or the refusal a single create would have had' }),
  created: Type.Integer(),
  failed: Type.Integer()
})

type TrackerTool = ToolDefinition<any, any, TrackerToolContext>
const read = { permission: 'tracker.read', risk: 'read' } as const
const write = { permission: 'tracker.write', risk: 'write' } as const
const removal = { permission: 'tracker.write', risk: 'critical' } as const

/** The tracker's tools: each the REST route's operation, on its schemas and its service call. */
export const TRACKER_TOOLS: TrackerTool[] = [
  {
    name: 'work_items_list',
    title: 'List work items',
    description: 'Work items of a tracker project by a filter (a TrackerFilter as JSON), a saved view and an order, a page at a time: ' +
      'pass the answer\'s `nextCursor` as `query.cursor` for the next page.',
    ...read,
    input: inProject({ query: Type.Optional(ListWorkItemsQuery) }),
    output: ItemList,
    run: async (c, input) => await c.tracker.lists.list(await c.scope(input.lpId), input.query ?? {})
  },
  {
    name: 'work_items_count',
    title: 'Count work items',
    description: 'How many work items match a filter, in total and per value of `groupBy`.',
    ...read,
    input: inProject({ query: Type.Optional(CountWorkItemsQuery) }),
    output: CountResult,
    run: async (c, input) => await c.tracker.lists.count(await c.scope(input.lpId), input.query ?? {})
  },
  {
    name: 'tracker_search',
    title: 'Search the tracker',
    description: 'Finds work items, intake items, comments and pages the caller may read, across the tracker projects of the platform ' +
      'project: a key (`WEB-42`), a key prefix (`WEB-4`) or a number first, then words ranked over titles, descriptions, comments and ' +
      'pages, with snippets and counts per type. `filter` (a TrackerFilter as JSON) and `lpId` narrow it; pass `nextCursor` as `cursor`.',
    ...read,
    input: SearchQuery,
    output: searchResult(WorkItem),
    run: async (c, input) => await c.tracker.search.search(c.actor, c.projectId, input)
  },
  {
    name: 'work_item_get_by_key',
    title: 'Get a work item by key',
    description: 'One work item by its key (`WEB-42`), in any tracker project of the platform project the caller may read.',
    ...read,
    input: Type.Object({ key: KeyParams.properties.key }, { additionalProperties: false }),
    output: WorkItem,
    run: async (c, input) => await c.tracker.workItems.getByKey(c.actor, c.projectId, input.key)
  },
  {
    name: 'work_item_create',
    title: 'Create a work item',
    description: 'Creates a work item; unset fields take the project\'s defaults. Its key is the project\'s identifier and the next number.',
    ...write,
    input: inProject({ item: CreateWorkItemBody }),
    output: WorkItem,
    run: async (c, input) => await c.tracker.workItems.create(await c.scope(input.lpId), input.item)
  },
  {
    name: 'work_items_bulk_create',
    title: 'Create several work items',
    description: `Creates up to ${BULK_CREATE_MAX} work items, each as work_item_create would and answered on its own: one refused leaves the others.`,
    ...write,
    input: inProject({ items: Type.Array(CreateWorkItemBody, { minItems: 1, maxItems: BULK_CREATE_MAX }) }),
    output: BulkCreateResult,
    run: async (c, input) => {
      const scope = await c.scope(input.lpId)
      const results: Array<typeof BulkItemResult.static> = []
      for (const body of input.items) {
        try {
          const item = await c.tracker.workItems.create(scope, body)
          results.push({ id: item.id, status: 201, key: item.key, version: item.version, code: null, message: null })
        } catch (error) {
          if (!(error instanceof AppError)) throw error
          results.push({ id: '', status: error.status, key: null, version: null, code: error.code, message: error.message })
        }
      }
      const created = results.filter((result) => result.status === 201).length
      return { results, created, failed: results.length - created }
    }
  },
  {
    name: 'work_item_update',
    title: 'Update a work item',
    description: 'Changes a work item\'s fields (one activity entry per changed field).',
    ...write,
    input: inProject({ itemId, patch: UpdateWorkItemBody }),
    output: WorkItem,
    run: async (c, input) => await c.tracker.workItems.update(await c.scope(input.lpId), input.itemId, input.patch)
  },
  {
    name: 'work_items_bulk_update',
    title: 'Update several work items',
    description: 'Patches up to 500 items, one patch for all (`ids` and `patch`) or one each (`items`); each answered on its own.',
    ...write,
    input: inProject({ body: BulkPatchBody }),
    output: BulkPatchResult,
    run: async (c, input) => await c.tracker.workItems.bulkPatch(await c.scope(input.lpId), input.body)
  },
  {
    name: 'work_item_archive',
    title: 'Archive a work item',
    description: 'Archives a completed or cancelled work item (it leaves lists unless a filter asks for archived items).',
    ...removal,
    input: inProject({ itemId }),
    output: WorkItem,
    run: async (c, input) => await c.tracker.workItems.update(await c.scope(input.lpId), input.itemId, { archived: true })
  },
  {
    name: 'work_item_comment',
    title: 'Comment on a work item',
    description: 'Adds a comment to a work item; @mentions notify as in the app.',
    ...write,
    input: inProject({ itemId, comment: CommentBody }),
    output: Comment,
    run: async (c, input) => await c.tracker.comments.create(await c.scope(input.lpId), input.itemId, input.comment)
  },
  {
    name: 'work_item_link',
    title: 'Link a URL to a work item',
    description: 'Adds a link (a URL and an optional title) to a work item.',
    ...write,
    input: inProject({ itemId, link: LinkBody }),
    output: Link,
    run: async (c, input) => await c.tracker.links.create(await c.scope(input.lpId), input.itemId, input.link)
  },
  {
    name: 'work_item_relate',
    title: 'Relate two work items',
    description: 'Relates a work item to another (blocking, blocked_by, relates_to, duplicate, start/finish before/after).',
    ...write,
    input: inProject({ itemId, relation: RelationBody }),
    output: Relation,
    run: async (c, input) => await c.tracker.relations.create(await c.scope(input.lpId), input.itemId, input.relation)
  },
  {
    name: 'cycles_list',
    title: 'List cycles',
    description: 'The tracker project\'s cycles with their progress, a page at a time.',
    ...read,
    input: inProject({ query: Type.Optional(ListQuery) }),
    output: Page(Cycle),
    run: async (c, input) => await c.tracker.cycles.list(await c.scope(input.lpId), input.query ?? {})
  },
  {
    name: 'cycle_add_items',
    title: 'Put work items in a cycle',
    description: 'Moves up to 500 items into the cycle (out of any other), each answered on its own.',
    ...write,
    input: inProject({ cycleId, body: CycleItemsBody }),
    output: BulkPatchResult,
    run: async (c, input) => await c.tracker.flows.addToCycle(await c.scope(input.lpId), input.cycleId, input.body.itemIds)
  },
  {
    name: 'cycle_remove_item',
    title: 'Take a work item out of a cycle',
    description: 'Takes one item out of the cycle.',
    ...removal,
    input: inProject({ cycleId, itemId }),
    output: Deleted,
    run: async (c, input) => {
      await c.tracker.flows.removeFromCycle(await c.scope(input.lpId), input.cycleId, input.itemId)
      return { id: input.itemId, deleted: true as const }
    }
  },
  {
    name: 'cycle_transfer',
    title: 'Transfer a cycle\'s unfinished items',
    description: 'Moves the cycle\'s unfinished items to another cycle and freezes its progress.',
    ...removal,
    input: inProject({ cycleId, body: TransferBody }),
    output: TransferResult,
    run: async (c, input) => await c.tracker.flows.transfer(await c.scope(input.lpId), input.cycleId, input.body.targetCycleId)
  },
  {
    name: 'modules_list',
    title: 'List modules',
    description: 'The tracker project\'s modules with their progress, a page at a time.',
    ...read,
    input: inProject({ query: Type.Optional(ListQuery) }),
    output: Page(Module),
    run: async (c, input) => await c.tracker.modules.list(await c.scope(input.lpId), input.query ?? {})
  },
  {
    name: 'module_change_items',
    title: 'Add work items to a module or remove them',
    description: 'Items join (`add`) and leave (`remove`) the module, up to 500 each, each answered on its own.',
    ...write,
    input: inProject({ moduleId, body: ModuleItemsBody }),
    output: BulkPatchResult,
    run: async (c, input) => await c.tracker.flows.setModuleItems(await c.scope(input.lpId), input.moduleId, input.body)
  },
  {
    name: 'intake_list',
    title: 'List intake items',
    description: 'Items waiting in (or decided in) the tracker project\'s intake, by status, a page at a time.',
    ...read,
    input: inProject({ query: Type.Optional(ListIntakeQuery) }),
    output: Page(WorkItem),
    run: async (c, input) => await c.tracker.intake.list(await c.scope(input.lpId), input.query ?? {})
  },
  {
    name: 'intake_triage',
    title: 'Triage an intake item',
    description: 'Accepts (into a state), declines, snoozes (until a time), marks as a duplicate or puts back to pending an intake item.',
    ...write,
    input: inProject({ itemId, decision: IntakeDecisionBody }),
    output: WorkItem,
    run: async (c, input) => await c.tracker.intake.decide(await c.scope(input.lpId), input.itemId, input.decision)
  },
  {
    name: 'states_list',
    title: 'List workflow states',
    description: 'The tracker project\'s states in board order, with their groups.',
    ...read,
    input: inProject({ query: Type.Optional(ListStatesQuery) }),
    output: Page(TrackerState),
    run: async (c, input) => await c.tracker.states.list(await c.scope(input.lpId), input.query ?? {})
  },
  {
    name: 'labels_list',
    title: 'List labels',
    description: 'The tracker project\'s labels.',
    ...read,
    input: inProject({ query: Type.Optional(ListQuery) }),
    output: Page(TrackerLabel),
    run: async (c, input) => await c.tracker.labels.list(await c.scope(input.lpId), input.query ?? {})
  },
  {
    name: 'members_list',
    title: 'List members',
    description: 'Who is in the tracker project (and may be assigned), with their tracker roles.',
    ...read,
    input: inProject({ query: Type.Optional(ListQuery) }),
    output: Page(TrackerMember),
    run: async (c, input) => await c.tracker.members.list(await c.scope(input.lpId), input.query ?? {})
  },
  {
    name: 'member_add',
    title: 'Add a member',
    description: 'Adds a platform user (who may use the tracker) to the tracker project with a role.',
    permission: 'tracker.admin',
    // Grants access: a model steered by text it read must not let someone in unasked.
    risk: 'critical',
    input: inProject({ member: AddMemberBody }),
    output: TrackerMember,
    run: async (c, input) => await c.tracker.members.add(await c.scope(input.lpId), input.member)
  }
]

export function addTrackerTools<C extends TrackerToolContext> (registry: ToolRegistry<C>): void {
  for (const tool of [...TRACKER_TOOLS, ...WORKSPACE_TOOLS]) registry.add(tool)
}
