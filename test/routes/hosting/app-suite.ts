import type { Test } from 'tap'
import { createHash } from 'node:crypto'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { buildTestApp, call, orgWithRoles } from '../../helper.js'
import { deploymentSettled, packFixture, uploadSource, viaGateway, waitFor } from './fixtures.js'

/**
 * The app suite both drivers run: node-hello from an upload, live behind the
 * gateway, redeployed under a request loop without a failure, rolled back
 * without a build, its secret reaching it and masked in every log, suspended,
 * resumed, scaled to three distinct instances, deleted.
 */
export async function appSuite (t: Test, env: Record<string, string>): Promise<void> {
  const app = await buildTestApp(t, { env: { GATEWAY_PORT: '0', ...env } })
  const { owner, viewer, orgId } = await orgWithRoles(app)
  const projectId = (await call(app, 'POST', '/api/projects', owner.auth, { orgId, name: 'Hello' })).body.data.id as string
  const appUrl = `/api/projects/${projectId}/backend/apps/${(await call(app, 'POST', `/api/projects/${projectId}/backend/apps`, owner.auth, { name: 'hello', healthCheckPath: '/healthz' })).body.data.id as string}`
  const port = app.hosting.gatewayPort() as number
  const host = 'hello.apps.localhost'

  const secret = 'sesame-7f3a9c1e-open'
  t.equal((await call(app, 'PUT', `${appUrl}/secrets/SECRET_TOKEN`, owner.auth, { value: secret })).body.data.version, 1)
  t.same([(await call(app, 'PUT', `${appUrl}/secrets/PORT`, owner.auth, { value: '1' })).body.code], ['APP_HOSTING_SECRET_INVALID'], 'the platform\'s variables are refused')

  t.equal((await viaGateway(port, host)).status, 502, 'before any deployment: no upstream')
  const uploadId = await uploadSource(app, appUrl, owner.auth, packFixture(t, 'node-hello'))
  const queued = await call(app, 'POST', `${appUrl}/deployments`, owner.auth, { uploadId })
  t.same([queued.status, queued.body.data.state, queued.body.data.source.type], [202, 'queued', 'upload'])
  const first = await deploymentSettled(app, appUrl, owner.auth, queued.body.data.id)
  t.match(first, { state: 'live', artifactId: String, reason: null })

  const hello = await viaGateway(port, host)
  t.equal(hello.status, 200)
  t.match(hello.body, /^hello /)
  t.equal((await viaGateway(port, host, '/secret-digest')).body, createHash('sha256').update(secret).digest('hex'), 'the secret reaches the app')
  const view = (await call(app, 'GET', appUrl, viewer.auth)).body.data
  t.match(view, { state: 'running', liveDeploymentId: first.id, currentDeployment: { id: first.id, state: 'live' } })
  t.equal(view.instances.length, 1)

  // A second deployment while a request loop runs: the switch is atomic and the old instance drains.
  const statuses: number[] = []
  const looping = { on: true }
  const loop = (async () => { while (looping.on) statuses.push((await viaGateway(port, host)).status) })()
  const second = (await call(app, 'POST', `${appUrl}/deployments`, owner.auth, { uploadId })).body.data.id as string
  t.equal((await deploymentSettled(app, appUrl, owner.auth, second)).state, 'live')
  await waitFor('requests after the switch', async () => statuses.length, (n) => n > 0)
  looping.on = false
  await loop
  t.ok(statuses.length > 0 && statuses.every((status) => status === 200), `no failure during the redeploy (${statuses.length} requests)`)
  t.equal((await call(app, 'GET', `${appUrl}/deployments/${first.id as string}`, owner.auth)).body.data.state, 'superseded')

  const rollback = await call(app, 'POST', `${appUrl}/deployments/${first.id as string}/rollback`, owner.auth)
  t.same([rollback.status, rollback.body.data.trigger, rollback.body.data.rollbackOf, rollback.body.data.artifactId], [202, 'rollback', first.id, first.artifactId])
  t.equal(rollback.headers.location, `${appUrl}/deployments/${rollback.body.data.id as string}`, 'Location names the new deployment, beside the one rolled back')
  const rolledBack = await deploymentSettled(app, appUrl, owner.auth, rollback.body.data.id)
  t.match(rolledBack, { state: 'live', artifactId: first.artifactId, buildSeconds: null }, 'the same artifact, no build')
  const buildLines = (await call(app, 'GET', `${appUrl}/logs/build?deploymentId=${rolledBack.id as string}`, owner.auth)).body.data
  t.same(buildLines, [], 'a rollback writes no build log')

  const logs = JSON.stringify([(await call(app, 'GET', `${appUrl}/logs/runtime`, owner.auth)).body, (await call(app, 'GET', `${appUrl}/logs/build`, owner.auth)).body])
  t.match(logs, /starting with SECRET_TOKEN=\*{8}/, 'the app logged its secret, masked')
  t.notOk(logs.includes(secret), 'no log holds the secret')
  t.notOk(JSON.stringify((await call(app, 'GET', `${appUrl}/secrets`, owner.auth)).body).includes(secret), 'nor does the API')

  t.equal((await call(app, 'POST', `${appUrl}/suspend`, owner.auth)).status, 200)
  const suspended = await viaGateway(port, host)
  t.equal(suspended.status, 503, 'suspended: 503')
  await waitFor('instances stopped', async () => (await call(app, 'GET', appUrl, owner.auth)).body.data.instances.length, (n) => n === 0)
  const resumed = await call(app, 'POST', `${appUrl}/unsuspend`, owner.auth)
  t.same([resumed.status, resumed.body.data.state], [200, 'deploying'], 'the answer says the app is starting again, not suspended')
  await waitFor('resumed', async () => (await viaGateway(port, host)).status, (status) => status === 200)

  t.equal((await call(app, 'PUT', `${appUrl}/scaling`, owner.auth, { instances: 3 })).status, 200, 'a count alone scales')
  await waitFor('three instances', async () => (await call(app, 'GET', appUrl, owner.auth)).body.data.instances.filter((one: { state: string }) => one.state === 'running').length, (n) => n === 3)
  const answered = new Set<string>()
  await waitFor('answers from three instances', async () => { answered.add((await viaGateway(port, host)).body); return answered.size }, (n) => n === 3)
  t.equal(answered.size, 3, 'three distinct instances answer')

  const timeline = (await call(app, 'GET', `${appUrl}/timeline?limit=200`, owner.auth)).body.data.map((event: { type: string }) => event.type)
  for (const type of ['suspended', 'unsuspended', 'scaled', 'secret.set', 'deployment.state']) t.ok(timeline.includes(type), `the timeline has ${type}`)
  const metrics = (await call(app, 'GET', `${appUrl}/metrics`, owner.auth)).body.data
  t.ok(metrics.app.requests >= statuses.length, 'the gateway\'s requests are counted')
  t.equal(metrics.instances.length, 3)

  t.equal((await call(app, 'DELETE', appUrl, owner.auth)).status, 200)
  t.equal((await viaGateway(port, host)).status, 404, 'a deleted app is unknown to the gateway')

  const cache = join(app.config.hosting.dir, 'driver', 'npm-caches', projectId)
  if (app.hosting.driver.name === 'process') t.ok(existsSync(cache), 'the project has its own npm cache')
  t.equal((await call(app, 'DELETE', `/api/projects/${projectId}`, owner.auth)).status, 200)
  t.notOk(existsSync(cache), 'which goes with the project')
}
