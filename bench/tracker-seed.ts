import type { BenchApp } from './bench-app.js'
import { trackerActor } from '../services/tracker/access.js'
import { TRACKER_COLLECTIONS, type ItemRecord } from '../services/tracker/records.js'
import { PRIORITIES } from '../schemas/tracker-filters.js'

const BATCH = 5_000
const DAY = 86_400_000

/**
 * A tracker project of `size` work items in `projectId`, seeded through the
 * Store's insertMany in batches of 5,000: copies of an item the service made,
 * spread over states, priorities, assignees and the last 60 days. Answers the
 * project's id, a key in its middle and the seconds the seeding took.
 */
export async function seedTrackerProject (app: BenchApp, userId: string, projectId: string, size: number): Promise<{ lpId: string, key: string, seconds: number }> {
  const actor = trackerActor(userId, ['tracker.read', 'tracker.write', 'tracker.admin'])
  const items = app.store.collection<ItemRecord>(TRACKER_COLLECTIONS.items)
  const counters = app.store.collection<{ next: number }>(TRACKER_COLLECTIONS.counters)
  const others = ['someone-1', 'someone-2', 'someone-3']
  const identifier = `T${size >= 1_000_000 ? `${size / 1_000_000}M` : `${size / 1000}K`}`
  const created = await app.tracker.projects.create(actor, projectId, { name: `${size} items`, identifier })
  const scope = await app.tracker.projects.scope(actor, projectId, created.id)
  const states = (await app.tracker.states.list(scope, {})).items
  const model = await app.tracker.workItems.create(scope, { title: 'Model item' })
  const stored = await items.findOne({ _id: model.id }) as ItemRecord
  const now = Date.now()
  const started = performance.now()
  for (let from = 2; from <= size; from += BATCH) {
    const batch: ItemRecord[] = []
    for (let seq = from; seq < Math.min(from + BATCH, size + 1); seq++) {
      const state = states[seq % states.length]
      const priority = PRIORITIES[Math.floor(seq / 7) % PRIORITIES.length]
      const at = new Date(now - (seq % 60) * DAY - seq)
      batch.push({
        ...stored,
        _id: `${created.id}-${seq}`,
        seq,
        title: `Item ${seq} of ${identifier}`,
        descriptionText: '',
        stateId: state.id,
        stateGroup: state.group,
        completedAt: state.group === 'completed' ? at : null,
        priority,
        priorityRank: PRIORITIES.indexOf(priority),
        assignees: seq % 3 === 0 ? [userId] : [others[seq % others.length]],
        sortOrder: seq * 1024,
        createdBy: seq % 2 === 0 ? userId : others[seq % others.length],
        createdAt: at,
        updatedAt: at,
        outbox: null
      })
    }
    await items.insertMany(batch)
  }
  await counters.updateOne({ _id: created.id }, { $set: { next: size } })
  return { lpId: created.id, key: `${identifier}-${Math.floor(size / 2)}`, seconds: (performance.now() - started) / 1000 }
}
