import type { Clock } from './clock.js'
import type { Store } from './store/types.js'

/**
 * One-time changes to stored data. Each is idempotent, so a node that dies
 * half-way, or two nodes running it at once, leave nothing wrong; once one
 * completes it is recorded and never scanned for again.
 */
export async function runOnce (store: Store, clock: Clock, name: string, migrate: () => Promise<void>): Promise<void> {
  const done = store.collection<{ doneAt: Date }>('migrations')
  if (await done.findOne({ _id: name }) !== null) return
  await migrate()
  await done.updateOne({ _id: name }, { $set: { doneAt: clock.now() } }, { upsert: true })
}
