import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { TSchema } from '@sinclair/typebox'
import type { FastifyRequest } from 'fastify'
import {
  WebhookDeliveryParams, WebhookListQuery, WebhookOwnerParams, WebhookParams, WebhookResponses
} from '../schemas/webhook-routes.js'
import {
  CreateWebhookBody, ReplayBody, RotateSecretBody, TestWebhookBody, UpdateWebhookBody, type CreateWebhookBodyT, type UpdateWebhookBodyT
} from '../schemas/webhooks.js'
import { commonErrors, type DeclaredError } from '../services/platform/errors.js'
import type { Permission } from '../services/orgs/catalogue.js'
import { webhookErrors as w } from '../services/webhooks/errors.js'
import type { SubscriptionRecord } from '../services/webhooks/index.js'
import { toWebhookView } from '../services/webhooks/subscriptions.js'
import type { ParentKinds, ParentName } from '../plugins/permissions.js'
import { created, deleted, ok } from './replies.js'

/** The parent kinds that are a family's webhook (`trackerWebhook`): each family registers its own, loading by its owner. */
export type WebhookParentName = { [K in ParentName]: ParentKinds[K] extends SubscriptionRecord ? K : never }[ParentName]

export interface WebhookRouteOptions {
  /** The engine's source name: `tracker`, `records`. */
  source: string
  /** The parent kind the family registered for one of its webhooks (`within` the owner's parent). */
  parent: WebhookParentName
  /** Where the owner is: the platform project today. */
  ownerParent: 'project'
  /** What managing the family's webhooks needs. */
  permission: Permission
  /** What reading them (lists, the log, notices) needs; `permission` when left out. */
  readPermission?: Permission
  /** Names the operations: `Tracker` gives `listTrackerWebhooks`. */
  operation: string
  tags: string[]
  /** The source's own refusals of a filter (its grammar's 400s). */
  filterErrors: readonly DeclaredError[]
  /** The create and update bodies with the family's filter typed in the contract; the engine's (filter: unknown) when left out. */
  bodies?: { create: TSchema, update: TSchema }
}

/**
 * The webhook routes of one family, on the one engine (`app.webhooks`,
 * docs/webhooks.md): webhooks, their secrets, the delivery log, redeliver,
 * replay, test and the disabled notices. A family mounts it under its own
 * prefix (`…/tracker/webhooks`) with its source, parent and permission; the
 * webhook named in the path is loaded once, by the family's parent kind.
 */
const webhookRoutes: FastifyPluginAsyncTypebox<WebhookRouteOptions> = async (app, options) => {
  const { webhooks } = app
  const { parent, permission, tags } = options
  const readPermission = options.readPermission ?? permission
  const { create: createBody, update: updateBody } = options.bodies ?? { create: CreateWebhookBody, update: UpdateWebhookBody }
  const name = options.operation
  const ownerOf = (request: FastifyRequest) => ({ projectId: request.scope.project.id, source: options.source })
  const hook = (request: FastifyRequest): SubscriptionRecord => request.scope[parent]
  const WRITES = [w.invalidUrl, w.urlForbidden, w.unknownEvent, ...options.filterErrors]
  const DELIVERY = [w.deliveryNotFound]
  const LIST = [commonErrors.invalidCursor]

  app.routeDefaults({ parent, permission })

  app.get('', {
    config: { parent: options.ownerParent, permission: readPermission, errors: LIST },
    schema: { operationId: `list${name}Webhooks`, tags, summary: 'The webhooks, oldest first', params: WebhookOwnerParams, querystring: WebhookListQuery, response: WebhookResponses.webhookList }
  }, async (request) => ok(await webhooks.list(ownerOf(request), request.query)))

  app.post('', {
    config: { parent: options.ownerParent, errors: [...WRITES, w.limitReached] },
    schema: {
      operationId: `create${name}Webhook`,
      tags,
      summary: 'Add a webhook; its signing secret is in this answer only',
      description: 'Receivers are signed with HMAC-SHA256 over `<t>.<raw body>` (`Plinth-Signature: t=…,v1=…`); docs/webhooks.md has ' +
        'the recipe. The URL must not reach an internal address unless the operator allows its host (WEBHOOK_ALLOWED_HOSTS).',
      params: WebhookOwnerParams,
      body: createBody,
      response: WebhookResponses.created
    }
  }, async (request, reply) => {
    // A family's body only types its filter more narrowly; the source checks the filter again as the engine saves it.
    const made = await webhooks.create(ownerOf(request), request.body as CreateWebhookBodyT, request.caller.user.userId)
    return created(reply, made, { id: made.webhook.id })
  })

  app.get('/notices', {
    config: { parent: options.ownerParent, permission: readPermission, errors: LIST },
    schema: {
      operationId: `list${name}WebhookNotices`,
      tags,
      summary: 'Webhooks disabled after sustained failure, newest first',
      params: WebhookOwnerParams,
      querystring: WebhookListQuery,
      response: WebhookResponses.noticeList
    }
  }, async (request) => ok(await webhooks.notices(ownerOf(request), request.query)))

  app.get('/:webhookId', {
    config: { permission: readPermission },
    schema: { operationId: `get${name}Webhook`, tags, summary: 'One webhook (never its secrets)', params: WebhookParams, response: WebhookResponses.webhook }
  }, async (request) => ok(toWebhookView(hook(request))))

  app.patch('/:webhookId', {
    config: { errors: WRITES },
    schema: {
      operationId: `update${name}Webhook`,
      tags,
      summary: 'Change a webhook; `active: true` re-enables a disabled one',
      description: 'Activating a webhook again clears its failure streak; replay the range it missed.',
      params: WebhookParams,
      body: updateBody,
      response: WebhookResponses.webhook
    }
  }, async (request) => ok(await webhooks.update(hook(request), request.body as UpdateWebhookBodyT)))

  app.delete('/:webhookId', {
    schema: { operationId: `delete${name}Webhook`, tags, summary: 'Delete a webhook with its deliveries and log', params: WebhookParams, response: WebhookResponses.deleted }
  }, async (request) => {
    await webhooks.delete(hook(request))
    return deleted(request.params.webhookId)
  })

  app.post('/:webhookId/rotate-secret', {
    schema: {
      operationId: `rotate${name}WebhookSecret`,
      tags,
      summary: 'A new signing secret, shown once; the previous one keeps signing for the grace',
      description: 'During the grace every request carries a `v1=` signature for each secret, so the receiver verifies with either.',
      params: WebhookParams,
      body: RotateSecretBody,
      response: WebhookResponses.rotated
    }
  }, async (request) => ok(await webhooks.rotateSecret(hook(request), request.body)))

  app.post('/:webhookId/test', {
    config: { errors: [w.unknownEvent] },
    schema: {
      operationId: `test${name}Webhook`,
      tags,
      summary: 'Send a sample event once, now, and answer the attempt',
      description: 'The test is kept in the log and neither counts toward nor ends a failure streak.',
      params: WebhookParams,
      body: TestWebhookBody,
      response: WebhookResponses.attempt
    }
  }, async (request) => ok(await webhooks.test(hook(request), request.body.type)))

  app.post('/:webhookId/replay', {
    config: { errors: [w.invalidRange, w.webhookInactive] },
    schema: {
      operationId: `replay${name}Webhook`,
      tags,
      summary: 'Send again the events of a time range this webhook takes',
      description: 'Each event gets a new round under its own event id; at most 5,000 a call (`truncated`, `through` say where to go on).',
      params: WebhookParams,
      body: ReplayBody,
      response: WebhookResponses.replay
    }
  }, async (request) => {
    const { from, to, onlyFailed } = request.body
    return ok(await webhooks.replay(hook(request), { from: new Date(from), to: new Date(to), ...(onlyFailed === undefined ? {} : { onlyFailed }) }))
  })

  app.get('/:webhookId/deliveries', {
    config: { permission: readPermission, errors: LIST },
    schema: {
      operationId: `list${name}WebhookDeliveries`,
      tags,
      summary: 'The deliveries, newest first',
      params: WebhookParams,
      querystring: WebhookListQuery,
      response: WebhookResponses.deliveryList
    }
  }, async (request) => ok(await webhooks.deliveries(hook(request), request.query)))

  app.get('/:webhookId/deliveries/:deliveryId', {
    config: { permission: readPermission, errors: DELIVERY },
    schema: { operationId: `get${name}WebhookDelivery`, tags, summary: 'One delivery', params: WebhookDeliveryParams, response: WebhookResponses.delivery }
  }, async (request) => ok(await webhooks.delivery(hook(request), request.params.deliveryId)))

  app.post('/:webhookId/deliveries/:deliveryId/redeliver', {
    config: { errors: [...DELIVERY, w.deliveryTestOnly, w.webhookInactive] },
    schema: {
      operationId: `redeliver${name}WebhookDelivery`,
      tags,
      summary: 'Send one delivery again, now, under the same event id',
      params: WebhookDeliveryParams,
      response: WebhookResponses.delivery
    }
  }, async (request) => ok(await webhooks.redeliver(hook(request), request.params.deliveryId)))

  app.get('/:webhookId/attempts', {
    config: { permission: readPermission, errors: LIST },
    schema: {
      operationId: `list${name}WebhookAttempts`,
      tags,
      summary: 'The delivery log: every attempt, newest first, with its status and timing',
      params: WebhookParams,
      querystring: WebhookListQuery,
      response: WebhookResponses.attemptList
    }
  }, async (request) => ok(await webhooks.attempts(hook(request), request.query)))

  app.get('/:webhookId/deliveries/:deliveryId/attempts', {
    config: { permission: readPermission, errors: [...LIST, ...DELIVERY] },
    schema: {
      operationId: `list${name}WebhookDeliveryAttempts`,
      tags,
      summary: 'The attempts of one delivery, newest first',
      params: WebhookDeliveryParams,
      querystring: WebhookListQuery,
      response: WebhookResponses.attemptList
    }
  }, async (request) => {
    const subscription = hook(request)
    await webhooks.delivery(subscription, request.params.deliveryId)
    return ok(await webhooks.attempts(subscription, request.query, { deliveryId: request.params.deliveryId }))
  })
}

export default webhookRoutes
