import type { FastifyPluginAsync } from 'fastify'
import { CreateRecordWebhookBody, UpdateRecordWebhookBody } from '../../schemas/auxiliary.js'
import { RECORDS_WEBHOOK_SOURCE } from '../../services/webhooks/sources/records.js'
import webhookRoutes from '../webhooks-shared.js'

/**
 * `/auxiliary/webhooks`: record webhooks (record created, updated and deleted
 * events of chosen collections) on the one engine, read with `auxiliary.read`
 * and managed with `auxiliary.manage`; the filter is `{ collections, where?,
 * fields? }` (docs/auxiliary.md).
 */
const recordWebhookRoutes: FastifyPluginAsync = async (app) => {
  await app.register(webhookRoutes, {
    source: RECORDS_WEBHOOK_SOURCE,
    parent: 'recordWebhook',
    ownerParent: 'project',
    permission: 'auxiliary.manage',
    readPermission: 'auxiliary.read',
    operation: 'Record',
    tags: ['auxiliary'],
    filterErrors: [],
    bodies: { create: CreateRecordWebhookBody, update: UpdateRecordWebhookBody }
  })
}

export default recordWebhookRoutes
