import t from 'tap'
import { buildTestApp, testEngine } from '../../helper.js'

t.test('liveness and readiness', async (t) => {
  const app = await buildTestApp(t)
  const health = await app.inject({ url: '/healthz' })
  t.equal(health.statusCode, 200)
  t.match(health.json(), { success: true, data: { status: 'ok', uptimeSeconds: Number } })

  const ready = await app.inject({ url: '/readyz' })
  t.equal(ready.statusCode, 200)
  t.same(ready.json(), { success: true, data: { status: 'ready', store: testEngine } }, 'names the engine the suite runs on')
})

t.test('readiness fails with 503 once the store is gone', async (t) => {
  // Hosting off: closing, a test app asks the store which instances to stop, and this store is gone.
  const app = await buildTestApp(t, { env: { HOSTING_ENABLED: 'false' } })
  await app.store.close()
  const ready = await app.inject({ url: '/readyz' })
  t.equal(ready.statusCode, 503)
  t.match(ready.json(), { success: false, code: 'APP_STORE_UNAVAILABLE' })
  t.equal(ready.headers['retry-after'], '5')
})
