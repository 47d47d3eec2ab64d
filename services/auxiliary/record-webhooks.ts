import type { DataCollection } from '../collections/records.js'
import type { Webhooks, WebhookOwner, SubscriptionRecord } from '../webhooks/index.js'
import { RECORDS_WEBHOOK_SOURCE, recordsWebhookSource } from '../webhooks/sources/records.js'
import type { WebhookSource } from '../webhooks/source.js'
import { toWebhookView } from '../webhooks/subscriptions.js'
import type { CreateWebhookBodyT, WebhookT, WebhookWithSecretT } from '../../schemas/webhooks.js'
import type { RecordFeed } from './record-feed.js'

/**
 * Record webhooks: the engine's `records` source, fed by the record change
 * feed. Everything but creation is the engine's own call on the loaded
 * subscription; creation arms the project's feed first (record-feed.ts says
 * why that order makes a concurrent write safe).
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
      republish: async (since) => { await deps.feed.republish(since) }
    })
  }

  owner (projectId: string): WebhookOwner {
    return { projectId, source: RECORDS_WEBHOOK_SOURCE }
  }

  async find (projectId: string, webhookId: string): Promise<SubscriptionRecord | null> {
    return await this.deps.webhooks.find(this.owner(projectId), webhookId)
  }

  view (record: SubscriptionRecord): WebhookT {
    return toWebhookView(record)
  }

  /**
   * Arms the feed, then saves the webhook: every record write that begins
   * after the answer reads the armed flag and logs its change.
   */
  async create (projectId: string, body: CreateWebhookBodyT, createdBy: string | null): Promise<WebhookWithSecretT> {
    await this.deps.feed.arm(projectId)
    return await this.deps.webhooks.create(this.owner(projectId), body, createdBy)
  }
}
