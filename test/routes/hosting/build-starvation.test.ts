import t from 'tap'
import { buildTestApp, call, orgWithRoles, signUp, type TestApp } from '../../helper.js'
import { deploymentSettled, packFixture, uploadSource, viaGateway, waitFor } from './fixtures.js'
import type { DeploymentT } from '../../../schemas/hosting.js'

type Owner = { auth: Record<string, string> }

async function newProject (app: TestApp, owner: Owner, orgId: string, name: string): Promise<string> {
  return (await call(app, 'POST', '/api/projects', owner.auth, { orgId, name })).body.data.id as string
}

async function newApp (app: TestApp, owner: Owner, projectId: string, name: string): Promise<string> {
  return `/api/projects/${projectId}/backend/apps/${(await call(app, 'POST', `/api/projects/${projectId}/backend/apps`, owner.auth, { name, healthCheckPath: '/healthz' })).body.data.id as string}`
}

async function queue (app: TestApp, owner: Owner, appUrl: string, archive: Buffer): Promise<string> {
  return (await call(app, 'POST', `${appUrl}/deployments`, owner.auth, { uploadId: await uploadSource(app, appUrl, owner.auth, archive) })).body.data.id as string
}

async function deployment (app: TestApp, owner: Owner, appUrl: string, id: string): Promise<DeploymentT> {
  return (await call(app, 'GET', `${appUrl}/deployments/${id}`, owner.auth)).body.data as DeploymentT
}

async function buildingForever (app: TestApp, owner: Owner, appUrl: string, id: string): Promise<void> {
  await waitFor(`the endless build of ${id}`, async () => JSON.stringify((await call(app, 'GET', `${appUrl}/logs/build?deploymentId=${id}`, owner.auth)).body.data), (log) => log.includes('building forever'))
}

t.test('builds never starve another project\'s deployment nor the short jobs', async (t) => {
  // The defaults: two build slots on the node, one build at a time per project.
  const app = await buildTestApp(t, { env: { GATEWAY_PORT: '0' } })
  const port = app.hosting.gatewayPort() as number
  const endless = packFixture(t, 'endless-build')
  const { owner, orgId } = await orgWithRoles(app)
  const hog = await newProject(app, owner, orgId, 'Hog')
  const [first, second] = [await newApp(app, owner, hog, 'endless-1'), await newApp(app, owner, hog, 'endless-2')]
  const running = await queue(app, owner, first, endless)
  const waiting = await queue(app, owner, second, endless)
  await buildingForever(app, owner, first, running)
  t.match(await waitFor('the second build to wait', async () => await deployment(app, owner, second, waiting), (one) => one.reason !== null), {
    state: 'queued', reason: 'waiting for a build slot: this project already runs 1 build at a time (HOSTING_BUILDS_PER_PROJECT)'
  }, 'the project\'s second build waits for its first')

  // Another organization's deployment takes the node's other build slot and goes live.
  const other = await signUp(app, 'other@example.com')
  const otherOrg = (await call(app, 'POST', '/api/organizations', other.auth, { name: 'Other' })).body.data.id as string
  const shop = await newApp(app, other, await newProject(app, other, otherOrg, 'Shop'), 'shop')
  const shopDeployment = await queue(app, other, shop, packFixture(t, 'node-hello'))
  t.equal((await deploymentSettled(app, shop, other.auth, shopDeployment)).state, 'live', 'not kept queued by the endless builds')
  t.equal((await deployment(app, owner, first, running)).state, 'building', 'while the first endless build still runs')

  // A third project's endless build: both build slots are now held, and scaling (a short job) still runs at once.
  const third = await newApp(app, other, await newProject(app, other, otherOrg, 'Third'), 'endless-3')
  const thirdDeployment = await queue(app, other, third, endless)
  await buildingForever(app, other, third, thirdDeployment)
  t.equal((await call(app, 'PUT', `${shop}/scaling`, other.auth, { instances: 2, max: 2 })).status, 200)
  await waitFor('two instances', async () => (await call(app, 'GET', shop, other.auth)).body.data.instances.filter((one: { state: string }) => one.state === 'running').length, (n) => n === 2)
  t.equal((await viaGateway(port, 'shop.apps.localhost', '/healthz')).body, 'ok')
  t.same(await Promise.all([deployment(app, owner, first, running), deployment(app, other, third, thirdDeployment), deployment(app, owner, second, waiting)]).then((all) => all.map((one) => one.state)), ['building', 'building', 'queued'], 'the scaling ran while both build slots were held')

  for (const [url, auth, id] of [[second, owner.auth, waiting], [first, owner.auth, running], [third, other.auth, thirdDeployment]] as const) {
    t.equal((await call(app, 'POST', `${url}/deployments/${id}/cancel`, auth)).status, 200)
    t.equal((await deploymentSettled(app, url, auth, id)).state, 'canceled')
  }
})

t.test('a build past HOSTING_BUILD_TIMEOUT_SECONDS is stopped and fails, saying why', async (t) => {
  const app = await buildTestApp(t, { env: { HOSTING_BUILD_TIMEOUT_SECONDS: '2' } })
  const { owner, orgId } = await orgWithRoles(app)
  const appUrl = await newApp(app, owner, await newProject(app, owner, orgId, 'Slow'), 'endless')
  const id = await queue(app, owner, appUrl, packFixture(t, 'endless-build'))
  const reason = 'The build ran longer than 2 s (HOSTING_BUILD_TIMEOUT_SECONDS) and was stopped'
  t.match(await deploymentSettled(app, appUrl, owner.auth, id), { state: 'build_failed', reason })
  const log = (await call(app, 'GET', `${appUrl}/logs/build?deploymentId=${id}`, owner.auth)).body.data.map((line: { line: string }) => line.line)
  t.equal(log.at(-1), `Build failed: ${reason}`, 'the log ends saying why')
})
