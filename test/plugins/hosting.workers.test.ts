import t, { type Test } from 'tap'
import { setTimeout as delay } from 'node:timers/promises'
import { buildApp } from '../../app.js'
import { call, orgWithRoles, stopHostedInstances, testConfig, type TestApp } from '../helper.js'
import { packFixture, uploadSource, waitFor } from '../routes/hosting/fixtures.js'

/** Two apps on one store as WORKERS > 1 runs them (the lead and a follower), and an organization's owner. */
async function leadAndFollower (t: Test): Promise<{ lead: TestApp, follower: TestApp } & Awaited<ReturnType<typeof orgWithRoles>>> {
  const config = testConfig(t)
  const lead = await buildApp(config) as TestApp
  lead.addHook('preClose', async () => { await stopHostedInstances(lead) })
  const follower = await buildApp({ ...config, lead: false }) as TestApp
  await lead.ready()
  await follower.ready()
  t.teardown(async () => { await follower.close(); await lead.close() })
  return { lead, follower, ...await orgWithRoles(follower) }
}

/**
 * WORKERS > 1: the hosting supervisor and the gateway's route table live in
 * the lead. An app created, suspended or deleted through another worker
 * reaches the lead's routes through a reconcile job on the shared store.
 */
t.test('a route change made through a follower reaches the lead\'s gateway routes', async (t) => {
  const { lead, follower, owner, orgId } = await leadAndFollower(t)
  const projectId = (await call(follower, 'POST', '/api/projects', owner.auth, { orgId, name: 'Shop' })).body.data.id as string
  const base = `/api/projects/${projectId}/backend/apps`
  const created = await call(follower, 'POST', base, owner.auth, { name: 'web' })
  t.equal(created.status, 201)
  const appId = created.body.data.id as string

  const eventually = async (test: () => boolean, what: string): Promise<void> => {
    const deadline = Date.now() + 20_000
    while (!test()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting: ${what}`)
      await delay(50)
    }
  }
  await eventually(() => lead.hosting.routes.routeOf(appId) !== null, 'the lead routes the new app')
  t.pass('the lead routes the app created through the follower')
  t.equal(follower.hosting.routes.routeOf(appId), null, 'the follower keeps no route table of its own')

  t.equal((await call(follower, 'POST', `${base}/${appId}/suspend`, owner.auth)).status, 200)
  await eventually(() => lead.hosting.routes.routeOf(appId)?.suspended === true, 'the lead sees the suspension')
  t.pass('a suspension through the follower reaches the lead')

  t.equal((await call(follower, 'DELETE', `${base}/${appId}`, owner.auth)).status, 200)
  await eventually(() => lead.hosting.routes.routeOf(appId) === null, 'the lead drops the deleted app')
  t.pass('a deletion through the follower drops the lead\'s route')
})

t.test('a cancel served by a follower stops the build running in the lead', async (t) => {
  const { follower, owner, orgId } = await leadAndFollower(t)
  const projectId = (await call(follower, 'POST', '/api/projects', owner.auth, { orgId, name: 'Builds' })).body.data.id as string
  const appUrl = `/api/projects/${projectId}/backend/apps/${(await call(follower, 'POST', `/api/projects/${projectId}/backend/apps`, owner.auth, { name: 'endless' })).body.data.id as string}`
  const uploadId = await uploadSource(follower, appUrl, owner.auth, packFixture(t, 'endless-build'))
  const id = (await call(follower, 'POST', `${appUrl}/deployments`, owner.auth, { uploadId })).body.data.id as string
  // The build runs in the lead (the supervisor claims builds there only) and never ends by itself.
  await waitFor('the endless build', async () => JSON.stringify((await call(follower, 'GET', `${appUrl}/logs/build?deploymentId=${id}`, owner.auth)).body.data), (log) => log.includes('building forever'))
  t.equal((await call(follower, 'POST', `${appUrl}/deployments/${id}/cancel`, owner.auth)).status, 200)
  const settled = await waitFor('the build to stop', async () => (await call(follower, 'GET', `${appUrl}/deployments/${id}`, owner.auth)).body.data, (one) => one.state !== 'building', 60_000)
  t.match(settled, { state: 'canceled', reason: 'canceled during the build' }, 'the lead\'s build stopped, not checked only after it ends')
})
