import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import {
  AttemptsQuery, AuxiliaryPageQuery, AuxiliaryParams, AuxiliaryResponses, CreateRecordWebhookBody, RecordDeliveryParams,
  RecordWebhookParams, ReplayBody, RotateSecretBody, TestWebhookBody, UpdateRecordWebhookBody
} from '../../schemas/auxiliary.js'
import { webhookErrors } from '../../services/webhooks/errors.js'
import { created, deleted, ok } from '../replies.js'

const SUBSCRIPTION_WRITES = [webhookErrors.invalidUrl, webhookErrors.urlForbidden, webhookErrors.unknownEvent]

const webhookRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { webhooks } = app
  const { recordWebhooks } = app.auxiliary
  const tags = ['auxiliary']

  app.get('', {
    config: { permission: 'auxiliary.read' },
    schema: {
      operationId: 'listRecordWebhooks',
      tags,
      summary: 'The project\'s record webhooks, oldest first',
      description: 'Secrets are never shown, only their ids and expiry.',
      params: AuxiliaryParams,
      querystring: AuxiliaryPageQuery,
      response: AuxiliaryResponses.webhookList
    }
  }, async (request) => ok(await webhooks.list(recordWebhooks.owner(request.scope.project.id), request.query)))

  app.post('', {
    config: { permission: 'auxiliary.manage', errors: [...SUBSCRIPTION_WRITES, webhookErrors.limitReached] },
    schema: {
      operationId: 'createRecordWebhook',
      tags,
      summary: 'Subscribe a URL to record created, updated and deleted events of chosen collections',
      description: 'The signing secret is in the answer this once. Every record write acknowledged after this answer produces ' +
        'its event, even if the server dies right after the write.',
      params: AuxiliaryParams,
      body: CreateRecordWebhookBody,
      response: AuxiliaryResponses.webhookCreated
    }
  }, async (request, reply) => {
    const made = await recordWebhooks.create(request.scope.project.id, request.body, request.caller.user.userId)
    return created(reply, made, { id: made.webhook.id })
  })

  app.get('/notices', {
    config: { permission: 'auxiliary.read' },
    schema: {
      operationId: 'listRecordWebhookNotices',
      tags,
      summary: 'Record webhooks disabled after sustained failure, newest first',
      params: AuxiliaryParams,
      querystring: AuxiliaryPageQuery,
      response: AuxiliaryResponses.noticeList
    }
  }, async (request) => ok(await webhooks.notices(recordWebhooks.owner(request.scope.project.id), request.query)))

  app.get('/:webhookId', {
    config: { permission: 'auxiliary.read', parent: 'recordWebhook' },
    schema: {
      operationId: 'getRecordWebhook',
      tags,
      summary: 'One record webhook',
      params: RecordWebhookParams,
      response: AuxiliaryResponses.webhook
    }
  }, async (request) => ok(recordWebhooks.view(request.scope.recordWebhook)))

  app.patch('/:webhookId', {
    config: { permission: 'auxiliary.manage', parent: 'recordWebhook', errors: SUBSCRIPTION_WRITES },
    schema: {
      operationId: 'updateRecordWebhook',
      tags,
      summary: 'Change a record webhook\'s URL, events, filter, description or active flag',
      description: 'Activating a disabled webhook clears its failure streak; what it missed is sent with a replay.',
      params: RecordWebhookParams,
      body: UpdateRecordWebhookBody,
      response: AuxiliaryResponses.webhook
    }
  }, async (request) => ok(await webhooks.update(request.scope.recordWebhook, request.body)))

  app.delete('/:webhookId', {
    config: { permission: 'auxiliary.manage', parent: 'recordWebhook' },
    schema: {
      operationId: 'deleteRecordWebhook',
      tags,
      summary: 'Delete a record webhook, its deliveries and its log',
      params: RecordWebhookParams,
      response: AuxiliaryResponses.deleted
    }
  }, async (request) => {
    await webhooks.delete(request.scope.recordWebhook)
    return deleted(request.scope.recordWebhook._id)
  })

  app.post('/:webhookId/rotate-secret', {
    config: { permission: 'auxiliary.manage', parent: 'recordWebhook' },
    schema: {
      operationId: 'rotateRecordWebhookSecret',
      tags,
      summary: 'Make a new signing secret; the current one keeps signing for a grace',
      description: 'The new secret is in the answer this once. During the grace receivers get a `v1=` signature for each secret.',
      params: RecordWebhookParams,
      body: RotateSecretBody,
      response: AuxiliaryResponses.webhookWithSecret
    }
  }, async (request) => ok(await webhooks.rotateSecret(request.scope.recordWebhook, request.body)))

  app.post('/:webhookId/test', {
    config: { permission: 'auxiliary.manage', parent: 'recordWebhook', errors: [webhookErrors.unknownEvent] },
    schema: {
      operationId: 'testRecordWebhook',
      tags,
      summary: 'Send a sample event once, now, and answer the attempt',
      description: 'Kept in the log as a `test` delivery; it neither counts toward nor ends a failure streak.',
      params: RecordWebhookParams,
      body: TestWebhookBody,
      response: AuxiliaryResponses.attempt
    }
  }, async (request) => ok(await webhooks.test(request.scope.recordWebhook, request.body?.type)))

  app.post('/:webhookId/replay', {
    config: {
      permission: 'auxiliary.manage',
      parent: 'recordWebhook',
      errors: [webhookErrors.invalidRange, webhookErrors.webhookInactive]
    },
    schema: {
      operationId: 'replayRecordWebhook',
      tags,
      summary: 'Send again the events of a time range this webhook takes',
      params: RecordWebhookParams,
      body: ReplayBody,
      response: AuxiliaryResponses.replay
    }
  }, async (request) => {
    const { from, to, onlyFailed } = request.body
    const range = { from: new Date(from), to: new Date(to), ...(onlyFailed === undefined ? {} : { onlyFailed }) }
    return ok(await webhooks.replay(request.scope.recordWebhook, range))
  })

  app.get('/:webhookId/deliveries', {
    config: { permission: 'auxiliary.read', parent: 'recordWebhook' },
    schema: {
      operationId: 'listRecordWebhookDeliveries',
      tags,
      summary: 'The webhook\'s deliveries, newest first',
      params: RecordWebhookParams,
      querystring: AuxiliaryPageQuery,
      response: AuxiliaryResponses.deliveryList
    }
  }, async (request) => ok(await webhooks.deliveries(request.scope.recordWebhook, request.query)))

  app.get('/:webhookId/deliveries/:deliveryId', {
    config: { permission: 'auxiliary.read', parent: 'recordWebhook', errors: [webhookErrors.deliveryNotFound] },
    schema: {
      operationId: 'getRecordWebhookDelivery',
      tags,
      summary: 'One delivery',
      params: RecordDeliveryParams,
      response: AuxiliaryResponses.delivery
    }
  }, async (request) => ok(await webhooks.delivery(request.scope.recordWebhook, request.params.deliveryId)))

  app.post('/:webhookId/deliveries/:deliveryId/redeliver', {
    config: {
      permission: 'auxiliary.manage',
      parent: 'recordWebhook',
      errors: [webhookErrors.deliveryNotFound, webhookErrors.webhookInactive, webhookErrors.deliveryTestOnly]
    },
    schema: {
      operationId: 'redeliverRecordWebhookDelivery',
      tags,
      summary: 'Send a delivery again now, as a new round with the same event id',
      params: RecordDeliveryParams,
      response: AuxiliaryResponses.delivery
    }
  }, async (request) => ok(await webhooks.redeliver(request.scope.recordWebhook, request.params.deliveryId)))

  app.get('/:webhookId/attempts', {
    config: { permission: 'auxiliary.read', parent: 'recordWebhook' },
    schema: {
      operationId: 'listRecordWebhookAttempts',
      tags,
      summary: 'The delivery log: each HTTP attempt, newest first',
      params: RecordWebhookParams,
      querystring: AttemptsQuery,
      response: AuxiliaryResponses.attemptList
    }
  }, async (request) => {
    const { deliveryId, ...page } = request.query
    return ok(await webhooks.attempts(request.scope.recordWebhook, page, deliveryId === undefined ? {} : { deliveryId }))
  })
}

export default webhookRoutes
