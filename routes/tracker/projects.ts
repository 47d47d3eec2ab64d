import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import {
  CreateTrackerProjectBody, ListTrackerProjectsQuery, UpdateAutomationBody, UpdateTrackerProjectBody
} from '../../schemas/tracker.js'
import { IfMatchHeaders, PlatformTrackerParams, TrackerProjectPath, TrackerResponses } from '../../schemas/tracker-routes.js'
import { trackerActor } from '../../services/tracker/access.js'
import { trackerErrors as e } from '../../services/tracker/errors.js'
import { created, deleted, ok } from '../replies.js'
import { CONDITIONAL, LIST, WRITE } from './refusals.js'
import { ifMatch, tagged } from '../conditional.js'

/** What a project's settings may meet, from its identifier to the people it names. */
const PROJECT_FIELDS = [e.invalidIdentifier, e.invalidTimezone, e.invalidValue, e.invalidReference, e.notAMember, e.identifierTaken]

/** `/tracker/projects…`: tracker projects, their lifecycle and automations. */
const projectRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { projects } = app.tracker
  const tags = ['tracker']

  app.get('', {
    config: { permission: 'tracker.read', parent: 'project', errors: LIST },
    schema: {
      operationId: 'listTrackerProjects',
      tags,
      summary: 'The tracker projects the caller can see, oldest first',
      description: 'Public projects, and private ones the caller is a member of (every one with `tracker.admin`). ' +
        '`archived: true` lists archived ones.',
      params: PlatformTrackerParams,
      querystring: ListTrackerProjectsQuery,
      response: TrackerResponses.projectList
    }
  }, async (request) => {
    const actor = trackerActor(request.caller.user.userId, request.scope.permissions)
    return ok(await projects.list(actor, request.scope.project.id, request.query))
  })

  app.post('', {
    config: { permission: 'tracker.admin', parent: 'project', errors: [...PROJECT_FIELDS, e.limitReached] },
    schema: {
      operationId: 'createTrackerProject',
      tags,
      summary: 'Create a tracker project with the default workflow',
      description: 'It starts with five states (Backlog, the default, Todo, In Progress, Done, Cancelled) and its creator as an ' +
        'admin member; the lead and default assignee become members. The identifier is stored upper case and is unique in the ' +
        'platform project, former identifiers included.',
      params: PlatformTrackerParams,
      body: CreateTrackerProjectBody,
      response: TrackerResponses.projectCreated
    }
  }, async (request, reply) => {
    const actor = trackerActor(request.caller.user.userId, request.scope.permissions)
    return tagged(reply, created(reply, await projects.create(actor, request.scope.project.id, request.body)))
  })

  app.get('/:lpId', {
    config: { permission: 'tracker.read' },
    schema: {
      operationId: 'getTrackerProject',
      tags,
      summary: 'One tracker project, with the caller\'s role in it',
      params: TrackerProjectPath,
      response: TrackerResponses.project
    }
  }, async (request, reply) => tagged(reply, ok(projects.get(request.scope.trackerProject))))

  app.patch('/:lpId', {
    config: { permission: 'tracker.admin', errors: [...PROJECT_FIELDS, ...CONDITIONAL, ...WRITE] },
    schema: {
      operationId: 'updateTrackerProject',
      tags,
      summary: 'Change a tracker project\'s settings',
      description: 'A new identifier keeps the keys of the old one resolvable. Switching the estimate system clears the estimates ' +
        'of items that used the former one. With `If-Match`, only at that version.',
      params: TrackerProjectPath,
      headers: IfMatchHeaders,
      body: UpdateTrackerProjectBody,
      response: TrackerResponses.project
    }
  }, async (request, reply) => tagged(reply, ok(await projects.update(request.scope.trackerProject, request.body, ifMatch(request)))))

  app.delete('/:lpId', {
    config: { permission: 'tracker.admin', errors: [e.changed] },
    schema: {
      operationId: 'deleteTrackerProject',
      tags,
      summary: 'Delete a tracker project and everything in it',
      description: 'Gone for every reader at once; its items, pages, files and the rest are purged right after (finished by a job if the ' +
        'server stops half-way). Its identifiers become free again.',
      params: TrackerProjectPath,
      response: TrackerResponses.deleted
    }
  }, async (request) => {
    await projects.delete(request.scope.trackerProject)
    return deleted(request.scope.trackerProject.project._id)
  })

  app.post('/:lpId/archive', {
    config: { permission: 'tracker.admin', errors: [e.changed] },
    schema: {
      operationId: 'archiveTrackerProject',
      tags,
      summary: 'Archive a tracker project: read-only until restored',
      description: 'Every write into it is refused until it is restored. Archiving an archived project changes nothing.',
      params: TrackerProjectPath,
      response: TrackerResponses.project
    }
  }, async (request, reply) => tagged(reply, ok(await projects.archive(request.scope.trackerProject))))

  app.post('/:lpId/restore', {
    config: { permission: 'tracker.admin', errors: [e.changed] },
    schema: {
      operationId: 'restoreTrackerProject',
      tags,
      summary: 'Restore an archived tracker project',
      params: TrackerProjectPath,
      response: TrackerResponses.project
    }
  }, async (request, reply) => tagged(reply, ok(await projects.restore(request.scope.trackerProject))))

  app.get('/:lpId/automations', {
    config: { permission: 'tracker.read' },
    schema: {
      operationId: 'getTrackerAutomations',
      tags,
      summary: 'The project\'s automations: auto-archive and auto-close',
      params: TrackerProjectPath,
      response: TrackerResponses.automation
    }
  }, async (request) => ok(projects.automation(request.scope.trackerProject)))

  app.patch('/:lpId/automations', {
    config: { permission: 'tracker.admin', errors: [e.invalidReference, e.changed, ...WRITE] },
    schema: {
      operationId: 'updateTrackerAutomations',
      tags,
      summary: 'Switch the automations on or off',
      description: 'They run once a day as a job: auto-close moves open items untouched for N months to a cancelled state, ' +
        'auto-archive archives items closed for N months; each change is written to the item\'s activity as an automation\'s.',
      params: TrackerProjectPath,
      body: UpdateAutomationBody,
      response: TrackerResponses.automation
    }
  }, async (request) => ok(await projects.setAutomation(request.scope.trackerProject, request.body)))
}

export default projectRoutes
