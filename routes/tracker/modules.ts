import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { ListQuery } from '../../schemas/tracker.js'
import { CreateModuleBody, ModuleItemsBody, UpdateModuleBody } from '../../schemas/tracker-planning.js'
import { ListWorkItemsQuery } from '../../schemas/tracker-work-items.js'
import { IfMatchHeaders, ModuleParams, TrackerProjectPath, TrackerResponses } from '../../schemas/tracker-routes.js'
import { trackerErrors as e } from '../../services/tracker/errors.js'
import { opened } from './recents.js'
import { created, deleted, ok } from '../replies.js'
import { CONDITIONAL, ITEM_LIST, LIST, WRITE } from './refusals.js'
import { ifMatch, tagged } from '../conditional.js'

/** Modules are a feature a project may switch off, and guests do not plan. */
const MODULES = [e.featureDisabled, e.guestRefused]
const MODULE = [...MODULES, e.moduleNotFound]
const FIELDS = [e.invalidValue, e.notAMember, e.nameTaken]

/** `…/projects/:lpId/modules`: bodies of work with a status, a lead, members and links; items join several. */
const moduleRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { modules, flows } = app.tracker
  const tags = ['tracker']

  app.get('', {
    config: { permission: 'tracker.read', errors: [...MODULES, ...LIST] },
    schema: {
      operationId: 'listTrackerModules',
      tags,
      summary: 'The project\'s modules with their progress',
      params: TrackerProjectPath,
      querystring: ListQuery,
      response: TrackerResponses.moduleList
    }
  }, async (request) => ok(await modules.list(request.scope.trackerProject, request.query)))

  app.post('', {
    config: { permission: 'tracker.write', errors: [...MODULES, ...FIELDS, ...WRITE] },
    schema: {
      operationId: 'createTrackerModule',
      tags,
      summary: 'Create a module',
      description: 'The lead and members are members of the tracker project; names are unique in it, letter case aside.',
      params: TrackerProjectPath,
      body: CreateModuleBody,
      response: TrackerResponses.moduleCreated
    }
  }, async (request, reply) => tagged(reply, created(reply, await modules.create(request.scope.trackerProject, request.body))))

  app.get('/:moduleId', {
    config: { permission: 'tracker.read', errors: MODULE },
    schema: {
      operationId: 'getTrackerModule',
      tags,
      summary: 'One module with its progress',
      params: ModuleParams,
      response: TrackerResponses.module
    }
  }, async (request, reply) => {
    const { trackerProject } = request.scope
    return tagged(reply, ok(await opened(request, trackerProject, 'module', await modules.get(trackerProject, request.params.moduleId))))
  })

  app.patch('/:moduleId', {
    config: { permission: 'tracker.write', errors: [...MODULE, ...FIELDS, ...CONDITIONAL, ...WRITE] },
    schema: {
      operationId: 'updateTrackerModule',
      tags,
      summary: 'Change a module; `links` replaces the whole list',
      params: ModuleParams,
      headers: IfMatchHeaders,
      body: UpdateModuleBody,
      response: TrackerResponses.module
    }
  }, async (request, reply) => {
    return tagged(reply, ok(await modules.update(request.scope.trackerProject, request.params.moduleId, request.body, ifMatch(request))))
  })

  app.delete('/:moduleId', {
    config: { permission: 'tracker.write', errors: [...MODULE, e.notYours, ...WRITE] },
    schema: {
      operationId: 'deleteTrackerModule',
      tags,
      summary: 'Delete a module (its creator or an admin); its items leave it',
      params: ModuleParams,
      response: TrackerResponses.deleted
    }
  }, async (request) => {
    await modules.delete(request.scope.trackerProject, request.params.moduleId)
    return deleted(request.params.moduleId)
  })

  app.get('/:moduleId/work-items', {
    config: { permission: 'tracker.read', errors: [...MODULE, ...ITEM_LIST] },
    schema: {
      operationId: 'listTrackerModuleWorkItems',
      tags,
      summary: 'The module\'s work items, as the work item list gives them',
      description: 'Filter, view, order and cursor as on the work item list; `updatedSince` is the project-wide sync of that list.',
      params: ModuleParams,
      querystring: ListWorkItemsQuery,
      response: TrackerResponses.workItemList
    }
  }, async (request) => ok(await flows.moduleItems(request.scope.trackerProject, request.params.moduleId, request.query)))

  app.post('/:moduleId/work-items', {
    config: { permission: 'tracker.write', errors: [...MODULE, ...WRITE] },
    schema: {
      operationId: 'changeTrackerModuleWorkItems',
      tags,
      summary: 'Items join (`add`) and leave (`remove`) the module, up to 500 each',
      description: 'Each item is changed as a PATCH of its `moduleIds` would change it, and answered on its own.',
      params: ModuleParams,
      body: ModuleItemsBody,
      response: TrackerResponses.bulk
    }
  }, async (request) => ok(await flows.setModuleItems(request.scope.trackerProject, request.params.moduleId, request.body)))
}

export default moduleRoutes
