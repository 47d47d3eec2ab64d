import { errorCatalogue, fieldIssue } from '../platform/errors.js'

/** Every code the webhook engine answers with, once: services throw `webhookErrors.name(params)`, routes list `webhookErrors.name`. */
export const webhookErrors = errorCatalogue('webhooks', {
  invalidUrl: {
    code: 'APP_WEBHOOK_INVALID_URL',
    status: 400,
    message: ({ why }: { why: string, path: string }) => `The webhook URL ${why}`,
    details: ({ path, why }) => fieldIssue(path, why),
    description: 'the URL is not an http(s) URL without credentials'
  },
  urlForbidden: {
    code: 'APP_WEBHOOK_URL_FORBIDDEN',
    status: 400,
    message: ({ kind }: { kind: string, path: string }) => `The webhook URL's host reaches ${/^[aeiou]/.test(kind) ? 'an' : 'a'} ${kind} address, which this server does not call; the operator may allow the host with WEBHOOK_ALLOWED_HOSTS`,
    details: ({ path, kind }) => fieldIssue(path, `reaches ${/^[aeiou]/.test(kind) ? 'an' : 'a'} ${kind} address`),
    description: 'the URL\'s host resolves to a loopback, private, link-local or other internal address the operator has not allowed'
  },
  unknownEvent: {
    code: 'APP_WEBHOOK_UNKNOWN_EVENT',
    status: 400,
    message: ({ type, known }: { type: string, known: readonly string[], path: string }) => `"${type}" is not an event type here; known: ${known.join(', ')}`,
    details: ({ path, type }) => fieldIssue(path, `"${type}" is not an event type here`),
    description: 'an event type is not one the family has'
  },
  invalidRange: {
    code: 'APP_WEBHOOK_INVALID_RANGE',
    status: 400,
    message: ({ why }: { why: string }) => `The replay range ${why}`,
    details: ({ why }) => fieldIssue('body.from', why),
    description: 'a replay\'s range is empty, reversed or reaches past what is kept'
  },
  webhookNotFound: { code: 'APP_WEBHOOK_NOT_FOUND', status: 404, message: 'Webhook not found', description: 'no such webhook in the project' },
  deliveryNotFound: { code: 'APP_WEBHOOK_DELIVERY_NOT_FOUND', status: 404, message: 'Delivery not found', description: 'no such delivery of the webhook' },
  limitReached: {
    code: 'APP_WEBHOOK_LIMIT_REACHED',
    status: 409,
    message: ({ limit }: { limit: number }) => `A project holds at most ${limit} webhooks here`,
    details: ({ limit }) => ({ limit }),
    description: 'the project already has as many webhooks of the family as it may'
  },
  webhookInactive: {
    code: 'APP_WEBHOOK_INACTIVE',
    status: 409,
    message: 'The webhook is not active: activate it first',
    description: 'a redelivery or replay was asked of a paused or disabled webhook'
  },
  deliveryTestOnly: {
    code: 'APP_WEBHOOK_TEST_DELIVERY',
    status: 409,
    message: 'A test delivery is not redelivered: send another test',
    description: 'a redelivery was asked of a test delivery'
  }
})
