import t from 'tap'
import { randomBytes } from 'node:crypto'
import { createSecretBox } from '../../../services/platform/crypto.js'
import { Resealer, sealedAt, type SealedValues } from '../../../services/platform/reseal.js'
import type { Document, Store, StoreCollection } from '../../../services/store/types.js'
import { tempStore } from '../../helper.js'

const oldKey = randomBytes(32)
const newKey = randomBytes(32)
const oldBox = createSecretBox(oldKey)
const newBox = createSecretBox(newKey)
const rotatedBox = createSecretBox(newKey, [oldKey])
const bound = (id: string, slot: string): string => `thing:${id}:${slot}`

/** A test family: one value at `secret`, more in the `keys` array (each bound to its own id), the key id beside them. */
const things = (): SealedValues => ({
  collection: 'things',
  filter: { kind: 'sealed' },
  keyIdPath: 'keyId',
  values: (doc) => [
    ...sealedAt(doc, 'secret', bound(doc._id as string, 'secret')),
    ...((doc.keys ?? []) as Array<{ id: string, sealed: string }>).map((key, index) => ({ path: `keys.${index}.sealed`, sealed: key.sealed, associatedData: bound(doc._id as string, key.id) }))
  ]
})

t.test('only values under a retired key are re-sealed, page after page, each still bound to its document', async (t) => {
  const store = await tempStore(t)
  const collection = store.collection('things')
  const docs = Array.from({ length: 450 }, (_, i) => {
    const id = `t${String(i).padStart(4, '0')}`
    const box = i % 3 === 0 ? newBox : oldBox
    return { _id: id, kind: 'sealed', keyId: box.keyId, secret: box.seal(`secret ${i}`, bound(id, 'secret')), keys: [{ id: 'a', sealed: box.seal(`a ${i}`, bound(id, 'a')) }, { id: 'b', sealed: box.seal(`b ${i}`, bound(id, 'b')) }] }
  })
  await collection.insertMany(docs)
  await collection.insertMany([
    { _id: 'plain', kind: 'plain', secret: oldBox.seal('not declared', bound('plain', 'secret')) },
    { _id: 'stranger', kind: 'sealed', secret: createSecretBox(randomBytes(32)).seal('no key here', bound('stranger', 'secret')) },
    { _id: 'empty', kind: 'sealed', secret: null }
  ])
  const resealer = new Resealer({ store, box: rotatedBox })
  resealer.register(things())
  t.throws(() => { resealer.register(things()) }, /declared twice/)

  t.same(await resealer.run(), { things: { documents: 452, resealed: 300 * 3, changed: 0, unreadable: 1 } }, 'three values in each of the 300 documents under the old key; a value no key opens is counted, not fatal')
  t.same(await resealer.run(), { things: { documents: 452, resealed: 0, changed: 0, unreadable: 1 } }, 'and then none')
  const opened = (await collection.find({ kind: 'sealed', _id: { $regex: '^t' } }).toArray()).map((doc) => {
    const [a, b] = doc.keys as Array<{ sealed: string }>
    return [newBox.open(doc.secret as string, bound(doc._id, 'secret')), newBox.open(a.sealed, bound(doc._id, 'a')), newBox.open(b.sealed, bound(doc._id, 'b')), doc.keyId === newBox.keyId]
  })
  t.same(opened, docs.map((_, i) => [`secret ${i}`, `a ${i}`, `b ${i}`, true]), 'the new key alone opens every value, and the key id beside them is the new key\'s')
  const plain = await collection.findOne({ _id: 'plain' })
  t.throws(() => newBox.open(plain?.secret as string, bound('plain', 'secret')), { code: 'APP_SEALED_SECRET_REJECTED' }, 'outside the declared filter: left alone')
})

t.test('a value a user changes between the read and the write is not overwritten; the next run takes what is left', async (t) => {
  const store = await tempStore(t)
  const collection = store.collection('things')
  await collection.insertOne({ _id: 'one', kind: 'sealed', keyId: oldBox.keyId, secret: oldBox.seal('before', bound('one', 'secret')), keys: [{ id: 'a', sealed: oldBox.seal('key a', bound('one', 'a')) }] })
  // The store the job writes through: a user's update (a new value, sealed under the current key) lands just before the job's own write.
  let raced = false
  const racing: Store = Object.create(store)
  racing.collection = <T extends Document>(name: string): StoreCollection<T> => {
    const inner = store.collection<T>(name)
    const wrapped: StoreCollection<T> = Object.create(inner)
    wrapped.updateOne = async (filter, update, options) => {
      if (!raced) {
        raced = true
        await inner.updateOne({ _id: 'one' }, { $set: { secret: rotatedBox.seal('changed by a user', bound('one', 'secret')) } })
      }
      return await inner.updateOne(filter, update, options)
    }
    return wrapped
  }
  const resealer = new Resealer({ store: racing, box: rotatedBox })
  resealer.register(things())
  const first = await resealer.run()
  const stored = await collection.findOne({ _id: 'one' })
  t.equal(newBox.open(stored?.secret as string, bound('one', 'secret')), 'changed by a user', 'the user\'s value stays')
  t.same(first, { things: { documents: 1, resealed: 0, changed: 1, unreadable: 0 } }, 'counted as changed meanwhile')
  t.throws(() => newBox.open((stored?.keys as Array<{ sealed: string }>)[0].sealed, bound('one', 'a')), { code: 'APP_SEALED_SECRET_REJECTED' }, 'the rest of the document waits for the next run')
  t.same(await resealer.run(), { things: { documents: 1, resealed: 1, changed: 0, unreadable: 0 } })
  const after = await collection.findOne({ _id: 'one' })
  t.equal(newBox.open((after?.keys as Array<{ sealed: string }>)[0].sealed, bound('one', 'a')), 'key a')
  t.equal(newBox.open(after?.secret as string, bound('one', 'secret')), 'changed by a user')
})
