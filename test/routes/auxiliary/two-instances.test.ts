import t from 'tap'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { buildTestApp, call, tempDir, testEngine } from '../../helper.js'
import { auxiliarySetup } from './fixtures.js'

// Both cases are about the embedded engine's file lock; MongoDB has no such lock.
const embedded = { skip: testEngine === 'sqlite' ? false : 'the embedded engine only' }

t.test('two app instances on one DATA_DIR writing at once: every create and change is answered 2xx, none 500', embedded, async (t) => {
  const dir = tempDir(t)
  const { app: first, owner, base } = await auxiliarySetup(t, { DATA_DIR: dir })
  const second = await buildTestApp(t, { env: { DATA_DIR: dir } })
  const variables = `${base}/variables`
  const made = await call(first, 'POST', variables, owner.auth, { key: 'COUNTER', value: '0' })
  const url = `${variables}/${made.body.data.id as string}`
  // Creates through one (group-committed inserts) meet changes through the other in the same event-loop turns.
  const answers = await Promise.all(Array.from({ length: 12 }, async (_, i) => {
    const [writer, changer] = i % 2 === 0 ? [first, second] : [second, first]
    const [created, changed] = await Promise.all([
      call(writer, 'POST', variables, owner.auth, { key: `KEY_${i}`, value: String(i) }),
      call(changer, 'PATCH', url, owner.auth, { value: String(i) })
    ])
    return [created.status, changed.status === 412 ? 200 : changed.status]
  }))
  t.same(answers, answers.map(() => [201, 200]), 'every write answered')
  const listed = await call(second, 'GET', `${variables}?limit=50`, owner.auth)
  t.equal(listed.body.data.items.length, 13)
})

t.test('a write lock another process keeps past STORE_BUSY_TIMEOUT_MS: 503 APP_STORE_BUSY with Retry-After, and the retry succeeds', embedded, async (t) => {
  const { app, owner, base } = await auxiliarySetup(t, { STORE_BUSY_TIMEOUT_MS: '100' })
  const variables = `${base}/variables`
  const made = await call(app, 'POST', variables, owner.auth, { key: 'LOCKED', value: '0' })
  const other = new Database(join(app.config.dataDir, 'plinth.db'))
  t.teardown(() => { if (other.open) other.close() })
  other.exec('BEGIN IMMEDIATE')
  const refused = await call(app, 'PATCH', `${variables}/${made.body.data.id as string}`, owner.auth, { value: '1' })
  t.same([refused.status, refused.body.code, refused.headers['retry-after'], refused.body.success], [503, 'APP_STORE_BUSY', '1', false])
  other.exec('COMMIT')
  const retried = await call(app, 'PATCH', `${variables}/${made.body.data.id as string}`, owner.auth, { value: '1' })
  t.same([retried.status, retried.body.data.value, retried.body.data.version], [200, '1', 2], 'nothing was written by the refused change')
})
