import type { Filter, StoreCollection } from '../../store/types.js'
import { compileFilter as storePredicate } from '../../store/semantics/match.js'
import { checkFilter, compileFilter } from '../../tracker/filters.js'
import { toItemView, toTombstoneView } from '../../tracker/item-rules.js'
import type { ItemRecord, OutboxChange, TrackerProjectRecord } from '../../tracker/records.js'
import type { TrackerFilterT } from '../../../schemas/tracker-filters.js'
import type { WebhookEventInput, WebhookSource } from '../source.js'

/**
 * The tracker as a webhook source (docs/webhooks.md, "The tracker"): one
 * event per logical change, made from the item's outbox (`OutboxChange`,
 * one `changeId` for every field the write changed), and a filter in the
 * tracker's own grammar matched against the stored item.
 */

export const TRACKER_WEBHOOK_SOURCE = 'tracker'
export const TRACKER_WEBHOOK_EVENTS = ['work_item.created', 'work_item.updated', 'work_item.deleted'] as const

/** The item as filters read it: the stored record, without its outbox and editor JSON. */
function matchable (item: ItemRecord): Record<string, unknown> {
  const { outbox: _outbox, descriptionJson: _json, ...rest } = item
  return rest
}

/**
 * The one event of an item write, from the outbox change the write left:
 * `created` and `deleted` entries name the type, every other entry is a
 * field in `changes`. Null for a change with no entries and for drafts,
 * which only their creator sees until they are promoted.
 */
export function trackerItemEvent (item: ItemRecord, change: OutboxChange, identifier: string): WebhookEventInput | null {
  if (change.entries.length === 0 || item.draft) return null
  const fields = new Set(change.entries.map((entry) => entry.field))
  const type = fields.has('created') ? 'work_item.created' : fields.has('deleted') ? 'work_item.deleted' : 'work_item.updated'
  return {
    key: `${item._id}:${change.id}`,
    type,
    occurredAt: change.at,
    actor: { type: change.automation ? 'automation' : 'user', id: change.actorId },
    data: item.deletedAt === null ? toItemView(item, identifier) : toTombstoneView(item, identifier),
    changes: type === 'work_item.updated' ? Object.fromEntries(change.entries.map((entry) => [entry.field, { from: entry.from ?? null, to: entry.to ?? null }])) : null,
    matchOn: matchable(item)
  }
}

export interface TrackerSourceDeps {
  /** The tracker project an item is in (its identifier names keys, its timezone reads relative days). */
  project: (lpId: string) => Promise<Pick<TrackerProjectRecord, 'identifier' | 'timezone'> | null>
  /** The tracker's items, for the sweep: it needs an index on `(projectId, updatedAt, _id)`. */
  items: StoreCollection<ItemRecord>
  publish: (source: string, projectId: string, events: WebhookEventInput[]) => Promise<void>
}

const SWEEP_PAGE = 500

export function trackerWebhookSource (deps: TrackerSourceDeps): WebhookSource {
  return {
    name: TRACKER_WEBHOOK_SOURCE,
    eventTypes: TRACKER_WEBHOOK_EVENTS,
    checkFilter: (_projectId, filter, path) => checkFilter(filter, path),
    // `me` in a webhook's filter is the person who made the webhook; relative days are read when the change happened.
    matches: async (subscription, event) => {
      const item = event.matchOn ?? {}
      const project = await deps.project(String(item.lpId))
      if (project === null) return false
      const { filter } = compileFilter(subscription.filter as TrackerFilterT, { userId: subscription.createdBy ?? '', timezone: project.timezone, now: event.occurredAt })
      return storePredicate(filter)(item)
    },
    sample: (_projectId, type) => ({
      key: 'sample',
      type,
      occurredAt: new Date(),
      actor: { type: 'user', id: 'sample-user' },
      data: { id: 'sample-item', key: 'WEB-1', number: 1, title: 'A sample work item', priority: 'medium', stateGroup: 'started' },
      changes: type === 'work_item.updated' ? { priority: { from: 'low', to: 'medium' } } : null
    }),
    republish: async (since, owners) => {
      for (const projectId of owners) {
        let after: { updatedAt: Date, _id: string } | null = null
        for (;;) {
          const range: Filter = after === null ? { updatedAt: { $gte: since } } : { $or: [{ updatedAt: { $gt: after.updatedAt } }, { updatedAt: after.updatedAt, _id: { $gt: after._id } }] }
          const page = await deps.items.find({ projectId, ...range, outbox: { $ne: null } }, { sort: { updatedAt: 1, _id: 1 }, limit: SWEEP_PAGE }).toArray()
          for (const item of page) {
            const project = await deps.project(item.lpId)
            const event = project === null || item.outbox === null ? null : trackerItemEvent(item, item.outbox, project.identifier)
            if (event !== null) await deps.publish(TRACKER_WEBHOOK_SOURCE, item.projectId, [event])
          }
          if (page.length < SWEEP_PAGE) break
          after = page[page.length - 1]
        }
      }
    }
  }
}
