import t from 'tap'
import { openSqliteStore } from '../../../services/store/sqlite/index.js'
import { timedStore, untimed, type StoreOperation } from '../../../services/store/timed.js'
import { storeConformance } from './conformance.js'

/**
 * The timed Store (installed only when metrics are on) behaves as the engine
 * it wraps: the whole conformance suite passes through it, and each
 * operation is told once, by the port's method name.
 */
const engine = openSqliteStore({ file: ':memory:' })
const seen = new Map<StoreOperation, number>()
const store = timedStore(engine, (operation, seconds) => {
  if (seconds < 0) throw new Error('a negative duration')
  seen.set(operation, (seen.get(operation) ?? 0) + 1)
})
t.teardown(async () => { await store.close() })

t.test('conformance through the wrapper', async (t) => { await storeConformance(t, async () => store) })

t.test('each operation told once, by name; shared reads keep the engine\'s frozen documents', async (t) => {
  seen.clear()
  const notes = store.collection<{ title: string }>('timed_notes')
  await notes.insertOne({ _id: 'n1', title: 'one' })
  await notes.find({}).toArray()
  await notes.countDocuments({})
  await notes.updateOne({ _id: 'n1' }, { $set: { title: 'uno' } })
  for await (const note of notes.find({})) t.equal(note.title, 'uno', 'iterating passes through (untimed)')
  const shared = store.extensions.shared<{ title: string }>('timed_notes')
  const first = await shared.findOne({ _id: 'n1' })
  t.equal(await shared.findOne({ _id: 'n1' }), first, 'the same frozen instance, as the engine hands out')
  t.equal(first, await engine.extensions.shared('timed_notes').findOne({ _id: 'n1' }))
  await t.rejects(notes.insertOne({ _id: 'n1', title: 'again' }), { code: 'APP_DUPLICATE_KEY', collection: 'timed_notes' }, 'errors pass through')
  await notes.deleteOne({ _id: 'n1' })
  t.same(Object.fromEntries(seen), { insertOne: 2, find: 1, countDocuments: 1, updateOne: 1, sharedFindOne: 2, deleteOne: 1 })
  t.equal(store.engine, 'sqlite')
  t.equal(untimed(store), engine, 'the engine under it')
  t.equal(untimed(engine), engine)
})
