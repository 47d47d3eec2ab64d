import { Type } from '@sinclair/typebox'
import { ListQuery, Page } from '../../schemas/tracker.js'
import { ActiveCycle, WorkspaceActivity, WorkspaceActivityQuery, WorkspaceMember } from '../../schemas/tracker-workspace.js'
import type { ToolDefinition } from './registry.js'
import type { TrackerToolContext } from './tracker-tool-context.js'

const read = { permission: 'tracker.read', risk: 'read' } as const
const listInput = Type.Object({ query: Type.Optional(ListQuery) }, { additionalProperties: false })

/** The tracker's workspace-level reads as tools: the REST routes' operations, on their schemas and service calls. */
export const WORKSPACE_TOOLS: Array<ToolDefinition<any, any, TrackerToolContext>> = [
  {
    name: 'workspace_members_list',
    title: 'List who can be assigned',
    description: 'Everyone who may use the tracker in this platform project, with their role in each tracker project the caller reads.',
    ...read,
    input: listInput,
    output: Page(WorkspaceMember),
    run: async (c, input) => await c.tracker.workspace.members(c.actor, c.projectId, input.query ?? {})
  },
  {
    name: 'workspace_activity_list',
    title: 'List recent activity across projects',
    description: 'What changed in the work items the caller may see across tracker projects, newest first; ' +
      '`query.filter` is a TrackerFilter (as JSON text) over the items.',
    ...read,
    input: Type.Object({ query: Type.Optional(WorkspaceActivityQuery) }, { additionalProperties: false }),
    output: Page(WorkspaceActivity),
    run: async (c, input) => await c.tracker.workspace.activity(c.actor, c.projectId, input.query ?? {})
  },
  {
    name: 'active_cycles_list',
    title: 'List active cycles',
    description: 'The cycles running today across the tracker projects the caller works in, with their progress.',
    ...read,
    input: listInput,
    output: Page(ActiveCycle),
    run: async (c, input) => await c.tracker.workspace.activeCycles(c.actor, c.projectId, input.query ?? {})
  }
]
