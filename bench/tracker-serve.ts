import { join } from 'node:path'
import Database from 'better-sqlite3'
import { benchOwner, benchPosts, startBenchApp } from './bench-app.js'
import { trackerActor } from '../services/tracker/access.js'
import { TRACKER_COLLECTIONS, type SubscriberRecord } from '../services/tracker/records.js'
import { seedTrackerProject } from './tracker-seed.js'

/**
 * The real app with tracker projects of 10,000, 100,000 and 1,000,000 work
 * items (BENCH_TRACKER_SIZES overrides), seeded by bench/tracker-seed.ts.
 */
const SIZES = (process.env.BENCH_TRACKER_SIZES ?? '10000,100000,1000000').split(',').map(Number)

const { app, dataDir } = await startBenchApp({ AUTH_RATE_LIMIT_MAX: '1000000' }, { dataDir: process.env.DATA_DIR })
const address = await app.listen({ port: 0, host: '127.0.0.1' })
const { userId, orgId } = await benchOwner(app)
const project = await app.projects.create(orgId, userId, { name: 'Tracker bench' })
const actor = trackerActor(userId, ['tracker.read', 'tracker.write', 'tracker.admin'])

const seeded: Record<string, string> = {}
for (const size of SIZES) {
  const { lpId, key, seconds } = await seedTrackerProject(app, userId, project.id, size)
  console.error(`seeded ${key.split('-')[0]}: ${size} items in ${seconds.toFixed(1)} s`)
  seeded[`lp${size}`] = lpId
  seeded[`key${size}`] = key
}

// The create row writes into a tracker project of its own: items it added to a listed project would sit at the hot end
// of the index the list rows walk (the newest, priority high), and those rows would measure them instead of the seed.
{
  const created = await app.tracker.projects.create(actor, project.id, { name: 'Created by the bench', identifier: 'TNEW' })
  seeded.lpCreate = created.id
}

// The notification fan-out row: an item with 50 subscribers besides its creator, which each comment tells.
{
  const lpId = seeded[`lp${SIZES[0]}`]
  const scope = await app.tracker.projects.scope(actor, project.id, lpId)
  const item = await app.tracker.workItems.create(scope, { title: 'Followed by 50' })
  const subscribers: SubscriberRecord[] = Array.from({ length: 50 }, (_, index) => ({
    _id: `${item.id}:follower-${index}`, projectId: project.id, lpId, itemId: item.id, userId: `follower-${index}`, reason: 'manual', createdAt: new Date()
  }))
  await app.store.collection<SubscriberRecord>(TRACKER_COLLECTIONS.subscribers).insertMany(subscribers)
  seeded.fanOutComments = `/api/projects/${project.id}/tracker/projects/${lpId}/work-items/${item.id}/comments`
}

// BENCH_RECORDS_FLOOR=1 (bench/tracker-cpu.ts): a record by id through the same Fastify, auth and store, as the floor the
// tracker's reads are compared with: `posts` of 10,000 records under an owner rule, as bench/serve.ts makes them.
if (process.env.BENCH_RECORDS_FLOOR === '1') {
  const { endUser } = await benchPosts(app, project.id)
  const now = new Date()
  const authors = [endUser.user.id, 'someone-else-1', 'someone-else-2', 'someone-else-3']
  await app.store.collection(`p_${project.id}_posts`).insertMany(Array.from({ length: 10_000 }, (_, i) => ({
    title: `post ${i}`, status: ['draft', 'review', 'published'][i % 3], author: authors[i % 4], views: i, createdAt: now, updatedAt: now, version: 1
  })))
  const post = await app.store.collection(`p_${project.id}_posts`).findOne({ author: endUser.user.id })
  seeded.projectToken = endUser.accessToken
  seeded.postId = String(post?._id)
}

// BENCH_TRACKER_ANALYZE=1: what statistics change, as an operator's `sqlite3 plinth.db ANALYZE` on the side would
// (the embedded engine keeps none itself; docs/tracker.md, "Access paths"). A diagnostic, off by default.
if (process.env.BENCH_TRACKER_ANALYZE === '1' && app.store.engine === 'sqlite') {
  const side = new Database(join(dataDir, 'plinth.db'))
  side.exec('ANALYZE')
  side.close()
  console.error('ANALYZE run on the side')
}

// A session started now: the one benchOwner started may have expired while a million items were seeded
// (ACCESS_TOKEN_TTL_SECONDS, 15 minutes), and every row would then measure 401s.
const { accessToken } = await app.identity.sessions.start(userId)
process.send?.({ address, accessToken, projectId: project.id, ...seeded })
