import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { CreateIntakeBody, IntakeDecisionBody, ListIntakeQuery } from '../../schemas/tracker-planning.js'
import { IdempotencyHeaders, ItemParams, TrackerProjectPath, TrackerResponses } from '../../schemas/tracker-routes.js'
import { trackerErrors as e } from '../../services/tracker/errors.js'
import { created, ok } from '../replies.js'
import { IDEMPOTENT, ITEM_FIELDS, LIST, WRITE } from './refusals.js'
import { idempotencyKey, tagged } from '../conditional.js'

const INTAKE = [e.featureDisabled, e.itemNotFound, e.intakeNotFound]

/** `…/projects/:lpId/intake`: proposed work items waiting in triage until someone decides on them. */
const intakeRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { intake } = app.tracker
  const tags = ['tracker']

  app.get('', {
    config: { permission: 'tracker.read', errors: [e.featureDisabled, ...LIST] },
    schema: {
      operationId: 'listTrackerIntake',
      tags,
      summary: 'Intake items, optionally of one status',
      description: '`pending` includes snoozed items whose time has come.',
      params: TrackerProjectPath,
      querystring: ListIntakeQuery,
      response: TrackerResponses.workItemPage
    }
  }, async (request) => ok(await intake.list(request.scope.trackerProject, request.query)))

  app.post('', {
    config: { permission: 'tracker.write', errors: [e.featureDisabled, ...ITEM_FIELDS, ...IDEMPOTENT, ...WRITE] },
    schema: {
      operationId: 'createTrackerIntakeItem',
      tags,
      summary: 'Propose a work item (guests too); it waits in the hidden triage state',
      description: 'It has a key like any item. With an Idempotency-Key a retry gets the same item.',
      params: TrackerProjectPath,
      headers: IdempotencyHeaders,
      body: CreateIntakeBody,
      response: TrackerResponses.workItemCreated
    }
  }, async (request, reply) => {
    const item = await intake.create(request.scope.trackerProject, request.body, { idempotencyKey: idempotencyKey(request) })
    return tagged(reply, created(reply, item))
  })

  app.get('/:itemId', {
    config: { permission: 'tracker.read', errors: INTAKE },
    schema: {
      operationId: 'getTrackerIntakeItem',
      tags,
      summary: 'One intake item',
      params: ItemParams,
      response: TrackerResponses.workItem
    }
  }, async (request, reply) => tagged(reply, ok(await intake.get(request.scope.trackerProject, request.params.itemId))))

  app.patch('/:itemId', {
    config: { permission: 'tracker.write', errors: [...INTAKE, e.intakeDecided, ...ITEM_FIELDS, ...WRITE] },
    schema: {
      operationId: 'decideTrackerIntakeItem',
      tags,
      summary: 'Accept, decline, snooze or mark an intake item a duplicate',
      description: 'Accepting moves it out of triage to the default state or `stateId`. Accepted and duplicate are final; a declined ' +
        'item stays in triage and may be decided again. Guests do not triage.',
      params: ItemParams,
      body: IntakeDecisionBody,
      response: TrackerResponses.workItem
    }
  }, async (request, reply) => tagged(reply, ok(await intake.decide(request.scope.trackerProject, request.params.itemId, request.body))))
}

export default intakeRoutes
