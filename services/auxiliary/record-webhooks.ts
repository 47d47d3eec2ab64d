import type { DataCollection } from '../collections/records.js'
import type { Webhooks, WebhookOwner, SubscriptionRecord } from '../webhooks/index.js'
import { RECORDS_WEBHOOK_SOURCE, recordsWebhookSource } from '../webhooks/sources/records.js'
import type { WebhookSource } from '../webhooks/source.js'
import type { RecordFeed } from './record-feed.js'

/**
 * Record webhooks: the engine's `records` source, fed by the record change
 * feed. Everything is the engine's own call on the loaded subscription; the
 * source arms the project's feed before its first webhook is saved
 * (record-feed.ts says why that order makes a concurrent write safe).
 */
export class RecordWebhooks {
  readonly source: WebhookSource

  constructor (private readonly deps: {
    feed: RecordFeed
    webhooks: Webhooks
    findCollection: (projectId: string, name: string) => Promise<DataCollection | null>
  }) {
    this.source = recordsWebhookSource({
      collection: deps.findCollection,
      republish: async (since) => { await deps.feed.republish(since) },
      beforeSubscribe: async (projectId) => { await deps.feed.arm(projectId) }
    })
  }

  owner (projectId: string): WebhookOwner {
    return { projectId, source: RECORDS_WEBHOOK_SOURCE }
  }

  async find (projectId: string, webhookId: string): Promise<SubscriptionRecord | null> {
    return await this.deps.webhooks.find(this.owner(projectId), webhookId)
  }
}
