import type { Clock } from '../platform/clock.js'
import type { Store, StoreCollection } from '../store/types.js'
import { retryUpsertRace } from '../platform/upsert-race.js'
import { WEBHOOK_COLLECTIONS, type SubscriptionRecord, type SweepRecord } from './records.js'
import type { WebhookSource } from './source.js'

/** Every minute: sources publish again what their outboxes hold since the last sweep (a crash may have cut a publish short). */
export const WEBHOOK_SWEEP_JOB = 'webhooks.sweep'
export const WEBHOOK_SWEEP_EVERY_MS = 60_000
/** Daily: what is older than WEBHOOK_RETENTION_DAYS goes. */
export const WEBHOOK_PRUNE_JOB = 'webhooks.prune'
export const WEBHOOK_PRUNE_EVERY_MS = 24 * 3_600_000

/**
 * A write that took its outbox before a sweep started may commit after the
 * sweep read past it; each sweep therefore reaches this far behind where the
 * last one started.
 */
const SWEEP_OVERLAP_MS = 5 * 60_000
/** How far back a source's first sweep looks. */
const FIRST_SWEEP_MS = 60 * 60_000

const PRUNED: Array<[keyof typeof WEBHOOK_COLLECTIONS, string]> = [['attempts', 'startedAt'], ['deliveries', 'createdAt'], ['events', 'createdAt'], ['notices', 'at']]
const PROJECT_DATA: Array<keyof typeof WEBHOOK_COLLECTIONS> = ['attempts', 'deliveries', 'events', 'notices', 'subscriptions']

/** The engine's upkeep: the outbox sweep, retention, and a deleted project's webhooks. */
export class WebhookUpkeep {
  private readonly sweeps: StoreCollection<SweepRecord>
  private readonly subscriptions: StoreCollection<SubscriptionRecord>

  constructor (private readonly store: Store, private readonly deps: { clock: Clock, retentionMs: number }) {
    this.sweeps = store.collection<SweepRecord>(WEBHOOK_COLLECTIONS.sweeps)
    this.subscriptions = store.collection<SubscriptionRecord>(WEBHOOK_COLLECTIONS.subscriptions)
  }

  async sweep (sources: readonly WebhookSource[]): Promise<{ swept: string[] }> {
    const swept: string[] = []
    for (const source of sources) {
      if (source.republish === undefined) continue
      const started = this.deps.clock.now()
      const last = await this.sweeps.findOne({ _id: source.name })
      const since = new Date((last?.sweptFrom.getTime() ?? started.getTime() - FIRST_SWEEP_MS) - SWEEP_OVERLAP_MS)
      const owners = await this.subscribedProjects(source.name)
      if (owners.length > 0) await source.republish(since, owners)
      await retryUpsertRace(async () => await this.sweeps.updateOne({ _id: source.name }, { $set: { sweptFrom: started, updatedAt: started } }, { upsert: true }))
      swept.push(source.name)
    }
    return { swept }
  }

  /** The projects with a subscription to the source, active or not (a disabled one may be enabled again and replayed). */
  private async subscribedProjects (source: string): Promise<string[]> {
    const owners = new Set<string>()
    let after = ''
    for (;;) {
      const page = await this.subscriptions.find({ source, projectId: { $gt: after } }, { sort: { source: 1, projectId: 1 }, limit: 1, projection: { projectId: 1 } }).toArray()
      if (page.length === 0) return [...owners]
      after = page[0].projectId
      owners.add(after)
    }
  }

  async prune (): Promise<{ deleted: number }> {
    const cutoff = new Date(this.deps.clock.nowMs() - this.deps.retentionMs)
    let deleted = 0
    // A page per write, however many expired; a prune cut short is finished by the next.
    for (const [name, field] of PRUNED) deleted += await this.store.extensions.sweep(WEBHOOK_COLLECTIONS[name]).deleteMany({ [field]: { $lt: cutoff } })
    return { deleted }
  }

  async purgeProject (projectId: string): Promise<void> {
    for (const name of PROJECT_DATA) await this.store.extensions.sweep(WEBHOOK_COLLECTIONS[name]).deleteMany({ projectId })
  }

  async purgeSubscription (subscriptionId: string): Promise<void> {
    for (const name of ['attempts', 'deliveries'] as const) await this.store.extensions.sweep(WEBHOOK_COLLECTIONS[name]).deleteMany({ subscriptionId })
  }
}
