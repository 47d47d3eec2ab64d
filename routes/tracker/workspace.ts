import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { ListQuery } from '../../schemas/tracker.js'
import { WorkspaceActivityQuery, WorkspacePath, WorkspaceResponses } from '../../schemas/tracker-workspace.js'
import { trackerActor } from '../../services/tracker/access.js'
import { trackerErrors as e } from '../../services/tracker/errors.js'
import { ok } from '../replies.js'
import { LIST } from './refusals.js'

/**
 * `/tracker/members`, `/tracker/activity`, `/tracker/active-cycles`: reads
 * across the tracker projects of the platform project, each limited to the
 * projects the caller may read and, inside them, to what their role there
 * shows (a guest: their own items; no cycles).
 */
const workspaceRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { workspace } = app.tracker
  const tags = ['tracker']
  const inProject = { permission: 'tracker.read', parent: 'project' } as const

  app.get('/members', {
    config: { ...inProject, errors: LIST },
    schema: {
      operationId: 'listTrackerWorkspaceMembers',
      tags,
      summary: 'Who can be assigned across the tracker, with their role in each tracker project the caller reads',
      description: 'Everyone holding `tracker.read` in the platform project, by user id. A public tracker project takes them ' +
        'all as members; a private one only its explicit members; `tracker.admin` holders are admins everywhere.',
      params: WorkspacePath,
      querystring: ListQuery,
      response: WorkspaceResponses.members
    }
  }, async (request) => ok(await workspace.members(actorOf(request), request.scope.project.id, request.query)))

  app.get('/activity', {
    config: { ...inProject, errors: [e.invalidFilter, ...LIST] },
    schema: {
      operationId: 'listTrackerWorkspaceActivity',
      tags,
      summary: 'What happened across the tracker projects the caller reads, newest first',
      description: '`filter` is a TrackerFilter over the items the entries are about, applied in the query with each ' +
        'project\'s visibility rule (a guest sees the activity of their own items), so a page holds only what the caller may see. ' +
        'A page stops early, with a cursor, after reading 2,000 entries.',
      params: WorkspacePath,
      querystring: WorkspaceActivityQuery,
      response: WorkspaceResponses.activity
    }
  }, async (request) => ok(await workspace.activity(actorOf(request), request.scope.project.id, request.query)))

  app.get('/active-cycles', {
    config: { ...inProject, errors: LIST },
    schema: {
      operationId: 'listTrackerActiveCycles',
      tags,
      summary: 'The cycles running today across the tracker projects, ending soonest first, with their progress',
      description: 'Today is read in each tracker project\'s timezone. Projects the caller is a guest of, archived projects ' +
        'and projects with cycles turned off are left out.',
      params: WorkspacePath,
      querystring: ListQuery,
      response: WorkspaceResponses.activeCycles
    }
  }, async (request) => ok(await workspace.activeCycles(actorOf(request), request.scope.project.id, request.query)))
}

/** The caller as the workspace services take them: the user and what they hold in the platform project. */
export function actorOf (request: { caller: { user: { userId: string } }, scope: { permissions: Iterable<string> } }) {
  return trackerActor(request.caller.user.userId, request.scope.permissions)
}

export default workspaceRoutes
