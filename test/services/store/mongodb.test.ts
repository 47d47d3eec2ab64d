import t from 'tap'
import { openMongoStore } from '../../../services/store/mongodb.js'
import { newId } from '../../../services/platform/ids.js'
import { storeConformance } from './conformance.js'

// The MongoDB half of the conformance suite runs wherever MONGODB_URL points at a real server.
const url = process.env.MONGODB_URL
if (url === undefined || url.trim() === '') {
  t.test('MongoDB conformance', { skip: 'MongoDB run skipped: MONGODB_URL not set' }, async () => {})
} else {
  // A database of its own per run, dropped afterwards.
  const db = `plinth_conformance_${newId()}`
  const store = await openMongoStore({ url, db })
  t.teardown(async () => {
    for (const name of await store.listCollections()) await store.dropCollection(name)
    await store.close()
  })
  await storeConformance(t, async () => store)
}
