import { benchOwner, type BenchApp } from './bench-app.js'
import { trackerActor, type TrackerActor } from '../services/tracker/access.js'
import { TRACKER_COLLECTIONS, type CommentRecord, type ItemRecord } from '../services/tracker/records.js'

/**
 * The search benches' data: a tracker project (identifier FIND) of `size`
 * work items (BENCH_SEARCH_ITEMS, 100,000 by default) and a comment on every
 * fifth, seeded through the Store's insertMany, so the text index takes them
 * in as any write: titles of five and descriptions of thirty words drawn from
 * a vocabulary of 5,000 with a Zipf-like spread (a few words in most items,
 * most words in few). Beside it in the same platform project, a tracker
 * project NEXT of NEIGHBOUR_ITEMS items of the same text: a search of FIND
 * alone (`lpId`) is then narrowed to a part of the index, as in any
 * deployment of more than one project.
 */
export const SEARCH_ITEMS = Number(process.env.BENCH_SEARCH_ITEMS ?? 100_000)
const BATCH = 5_000
const VOCABULARY = 5_000
const NEIGHBOUR_ITEMS = 2_000

export interface SearchSeed {
  userId: string
  accessToken: string
  projectId: string
  /** FIND's tracker project: a search with it is narrowed to FIND, beside NEXT. */
  lpId: string
  actor: TrackerActor
  /** A word of rank 20 (in ~10–17% of items), two of ranks 200 and 400 (each in ~1%), and a key. */
  common: string
  pair: string
  key: string
}

const syllables = ['ka', 'lo', 'mi', 'ne', 'su', 'ta', 'ri', 'po', 'de', 'ga', 'hu', 'vi', 'ze', 'bo', 'fa', 'ju', 'xe', 'yo', 'wa', 'qi']
const word = (rank: number): string => {
  let text = ''
  for (let n = rank + 20; n > 0; n = Math.floor(n / 20)) text += syllables[n % 20]
  return text
}

export async function seedSearch (app: BenchApp, size = SEARCH_ITEMS): Promise<SearchSeed> {
  const { userId, orgId } = await benchOwner(app)
  const project = await app.projects.create(orgId, userId, { name: 'Search bench' })
  const actor = trackerActor(userId, ['tracker.read', 'tracker.write', 'tracker.admin'])
  const items = app.store.collection<ItemRecord>(TRACKER_COLLECTIONS.items)
  const comments = app.store.collection<CommentRecord>(TRACKER_COLLECTIONS.comments)
  const counters = app.store.collection<{ next: number }>(TRACKER_COLLECTIONS.counters)
  const words = Array.from({ length: VOCABULARY }, (_, rank) => word(rank))
  // A fixed sequence of pseudo-random numbers, so every run seeds the same text.
  let state = 42
  const random = (): number => { state = (state * 1_103_515_245 + 12_345) % 2_147_483_648; return state / 2_147_483_648 }
  // Zipf-like: rank r drawn with weight 1/(r+1).
  const zipf = (): string => words[Math.min(VOCABULARY - 1, Math.floor(Math.exp(random() * Math.log(VOCABULARY + 1))) - 1)]
  const sentence = (length: number): string => Array.from({ length }, zipf).join(' ')

  const created = await app.tracker.projects.create(actor, project.id, { name: 'Search', identifier: 'FIND' })
  const scope = await app.tracker.projects.scope(actor, project.id, created.id)
  const model = await app.tracker.workItems.create(scope, { title: 'Model item' })
  const stored = await items.findOne({ _id: model.id }) as ItemRecord
  const now = new Date()
  const started = performance.now()
  for (let from = 2; from <= size; from += BATCH) {
    const batch: ItemRecord[] = []
    const notes: CommentRecord[] = []
    for (let seq = from; seq < Math.min(from + BATCH, size + 1); seq++) {
      const description = sentence(30)
      const itemId = `${created.id}-${seq}`
      batch.push({ ...stored, _id: itemId, seq, title: sentence(5), description, descriptionText: description, sortOrder: seq * 1024, outbox: null })
      if (seq % 5 === 0) {
        const text = sentence(12)
        notes.push({ _id: `${itemId}-c`, projectId: project.id, lpId: created.id, itemId, authorId: userId, format: 'markdown', body: text, bodyJson: null, text, mentions: [], createdAt: now, updatedAt: now, editedAt: null })
      }
    }
    await items.insertMany(batch)
    await comments.insertMany(notes)
  }
  await counters.updateOne({ _id: created.id }, { $set: { next: size } })
  const neighbour = await app.tracker.projects.create(actor, project.id, { name: 'Next', identifier: 'NEXT' })
  const neighbourModel = await items.findOne({ _id: (await app.tracker.workItems.create(await app.tracker.projects.scope(actor, project.id, neighbour.id), { title: 'Model item' })).id }) as ItemRecord
  await items.insertMany(Array.from({ length: NEIGHBOUR_ITEMS - 1 }, (_, i) => {
    const description = sentence(30)
    return { ...neighbourModel, _id: `${neighbour.id}-${i + 2}`, seq: i + 2, title: sentence(5), description, descriptionText: description, sortOrder: (i + 2) * 1024, outbox: null }
  }))
  await counters.updateOne({ _id: neighbour.id }, { $set: { next: NEIGHBOUR_ITEMS } })
  console.error(`seeded FIND: ${size} items and ${Math.floor(size / 5)} comments, and NEXT: ${NEIGHBOUR_ITEMS} items, indexed as written, in ${((performance.now() - started) / 1000).toFixed(1)} s`)
  const { accessToken } = await app.identity.sessions.start(userId)
  return { userId, accessToken, projectId: project.id, lpId: created.id, actor, common: words[20], pair: `${words[200]} ${words[400]}`, key: `FIND-${Math.floor(size / 2)}` }
}
