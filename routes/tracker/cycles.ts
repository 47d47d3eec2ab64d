import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { ListQuery } from '../../schemas/tracker.js'
import { BurndownQuery, CreateCycleBody, CycleItemsBody, TransferBody, UpdateCycleBody } from '../../schemas/tracker-planning.js'
import { ListWorkItemsQuery } from '../../schemas/tracker-work-items.js'
import { CycleItemParams, CycleParams, IfMatchHeaders, TrackerProjectPath, TrackerResponses } from '../../schemas/tracker-routes.js'
import { trackerErrors as e } from '../../services/tracker/errors.js'
import { opened } from './recents.js'
import { created, deleted, ok } from '../replies.js'
import { CONDITIONAL, ITEM_LIST, LIST, WRITE } from './refusals.js'
import { ifMatch, tagged } from '../conditional.js'

/** Cycles are a feature a project may switch off, and guests do not plan. */
const CYCLES = [e.featureDisabled, e.guestRefused]
const CYCLE = [...CYCLES, e.cycleNotFound]
const DATES = [e.invalidValue, e.cycleOverlap]

/** `…/projects/:lpId/cycles`: time boxes that may not overlap, their items, transfers and burndowns. */
const cycleRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { cycles, flows } = app.tracker
  const tags = ['tracker']

  app.get('', {
    config: { permission: 'tracker.read', errors: [...CYCLES, ...LIST] },
    schema: {
      operationId: 'listTrackerCycles',
      tags,
      summary: 'The project\'s cycles with their status and progress',
      description: 'Status comes from the dates read in the project\'s timezone: draft (no dates), upcoming, current or completed.',
      params: TrackerProjectPath,
      querystring: ListQuery,
      response: TrackerResponses.cycleList
    }
  }, async (request) => ok(await cycles.list(request.scope.trackerProject, request.query)))

  app.post('', {
    config: { permission: 'tracker.write', errors: [...CYCLES, ...DATES, ...WRITE] },
    schema: {
      operationId: 'createTrackerCycle',
      tags,
      summary: 'Create a cycle: both dates or neither (a draft)',
      description: 'Cycles of one project never share a day, however two creates race: at most one is current.',
      params: TrackerProjectPath,
      body: CreateCycleBody,
      response: TrackerResponses.cycleCreated
    }
  }, async (request, reply) => tagged(reply, created(reply, await cycles.create(request.scope.trackerProject, request.body))))

  app.get('/:cycleId', {
    config: { permission: 'tracker.read', errors: CYCLE },
    schema: {
      operationId: 'getTrackerCycle',
      tags,
      summary: 'One cycle with its progress',
      params: CycleParams,
      response: TrackerResponses.cycle
    }
  }, async (request, reply) => {
    const { trackerProject } = request.scope
    return tagged(reply, ok(await opened(request, trackerProject, 'cycle', await cycles.get(trackerProject, request.params.cycleId))))
  })

  app.patch('/:cycleId', {
    config: { permission: 'tracker.write', errors: [...CYCLE, ...DATES, e.cycleCompleted, ...CONDITIONAL, ...WRITE] },
    schema: {
      operationId: 'updateTrackerCycle',
      tags,
      summary: 'Rename a cycle or move its dates; a completed cycle is read-only',
      params: CycleParams,
      headers: IfMatchHeaders,
      body: UpdateCycleBody,
      response: TrackerResponses.cycle
    }
  }, async (request, reply) => {
    return tagged(reply, ok(await cycles.update(request.scope.trackerProject, request.params.cycleId, request.body, ifMatch(request))))
  })

  app.delete('/:cycleId', {
    config: { permission: 'tracker.write', errors: [...CYCLE, e.notYours, ...WRITE] },
    schema: {
      operationId: 'deleteTrackerCycle',
      tags,
      summary: 'Delete a cycle (its owner or an admin); its items leave it',
      params: CycleParams,
      response: TrackerResponses.deleted
    }
  }, async (request) => {
    await cycles.delete(request.scope.trackerProject, request.params.cycleId)
    return deleted(request.params.cycleId)
  })

  app.get('/:cycleId/work-items', {
    config: { permission: 'tracker.read', errors: [...CYCLE, ...ITEM_LIST] },
    schema: {
      operationId: 'listTrackerCycleWorkItems',
      tags,
      summary: 'The cycle\'s work items, as the work item list gives them',
      description: 'Filter, view, order and cursor as on the work item list; `updatedSince` is the project-wide sync of that list.',
      params: CycleParams,
      querystring: ListWorkItemsQuery,
      response: TrackerResponses.workItemList
    }
  }, async (request) => ok(await flows.cycleItems(request.scope.trackerProject, request.params.cycleId, request.query)))

  app.post('/:cycleId/work-items', {
    config: { permission: 'tracker.write', errors: [...CYCLE, ...WRITE] },
    schema: {
      operationId: 'addTrackerCycleWorkItems',
      tags,
      summary: 'Put up to 500 items in the cycle (out of any other)',
      description: 'Each item is moved as a PATCH of its `cycleId` would move it, and answered on its own.',
      params: CycleParams,
      body: CycleItemsBody,
      response: TrackerResponses.bulk
    }
  }, async (request) => ok(await flows.addToCycle(request.scope.trackerProject, request.params.cycleId, request.body.itemIds)))

  app.delete('/:cycleId/work-items/:itemId', {
    config: { permission: 'tracker.write', errors: [...CYCLE, e.itemNotFound, e.cycleCompleted, e.changed, ...WRITE] },
    schema: {
      operationId: 'removeTrackerCycleWorkItem',
      tags,
      summary: 'Take an item out of the cycle',
      params: CycleItemParams,
      response: TrackerResponses.deleted
    }
  }, async (request) => {
    await flows.removeFromCycle(request.scope.trackerProject, request.params.cycleId, request.params.itemId)
    return deleted(request.params.itemId)
  })

  app.post('/:cycleId/transfer', {
    config: { permission: 'tracker.write', errors: [...CYCLE, e.transferTarget, e.invalidReference, ...WRITE] },
    schema: {
      operationId: 'transferTrackerCycle',
      tags,
      summary: 'Move the cycle\'s unfinished items to another cycle, freezing its progress',
      description: 'The first transfer freezes the cycle\'s progress, which it shows from then on; unfinished items (neither completed ' +
        'nor cancelled) move to the target, which may not be completed.',
      params: CycleParams,
      body: TransferBody,
      response: TrackerResponses.transfer
    }
  }, async (request) => ok(await flows.transfer(request.scope.trackerProject, request.params.cycleId, request.body.targetCycleId)))

  app.get('/:cycleId/burndown', {
    config: { permission: 'tracker.read', errors: [...CYCLE, e.invalidValue] },
    schema: {
      operationId: 'getTrackerCycleBurndown',
      tags,
      summary: 'The cycle\'s burndown: a series per day with the ideal line and scope changes',
      description: 'From the start through today or the end, in items or points; replayed from the activity.',
      params: CycleParams,
      querystring: BurndownQuery,
      response: TrackerResponses.burndown
    }
  }, async (request) => ok(await cycles.burndown(request.scope.trackerProject, request.params.cycleId, request.query.unit)))
}

export default cycleRoutes
