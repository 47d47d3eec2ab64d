import t, { type Test } from 'tap'
import { buildApp } from '../../../app.js'
import { loadConfig } from '../../../services/config.js'
import { isAlive } from '../../../services/hosting/process-driver/process-tree.js'
import { call, orgWithRoles, stopHostedInstances, tempDir } from '../../helper.js'
import { deploymentSettled, packFixture, uploadSource, viaGateway, waitFor } from './fixtures.js'

/** The app as the server builds it, its log lines kept, closed (and its instances stopped) when the test ends. */
async function serverApp (t: Test, env: Record<string, string>) {
  const lines: string[] = []
  const app = await buildApp(loadConfig({ LOG_LEVEL: 'info', GATEWAY_PORT: '0', ...env }), { logger: { level: 'info', stream: { write: (line: string) => { lines.push(line) } } } })
  await app.ready()
  let closed = false
  t.teardown(async () => {
    if (closed) return
    await stopHostedInstances(app)
    await app.close()
  })
  const close = async (): Promise<void> => { closed = true; await app.close() }
  const logged = (message: string): Array<Record<string, unknown>> => lines.map((line) => JSON.parse(line) as Record<string, unknown>).filter((entry) => entry.msg === message)
  return { app, close, logged }
}

const KEPT = 'hosted apps keep running after the server stops, by design: the next start adopts them (HOSTING_STOP_APPS_ON_EXIT=true stops them on shutdown)'
const STOPPED = 'hosted app instances stopped (HOSTING_STOP_APPS_ON_EXIT): the next start starts the live deployments again'

t.test('by default the shutdown log says hosted apps keep running, and how to stop them', async (t) => {
  const { close, logged } = await serverApp(t, { DATA_DIR: tempDir(t) })
  await close()
  t.same(logged(KEPT).map((entry) => entry.instances), [0])
  t.same(logged(STOPPED), [])
})

t.test('HOSTING_STOP_APPS_ON_EXIT=true stops a deployed app\'s instances on shutdown; the next start runs it again', async (t) => {
  const env = { DATA_DIR: tempDir(t), HOSTING_STOP_APPS_ON_EXIT: 'true', HOSTING_STOP_GRACE_SECONDS: '2' }
  const first = await serverApp(t, env)
  const { owner, orgId } = await orgWithRoles(first.app)
  const projectId = (await call(first.app, 'POST', '/api/projects', owner.auth, { orgId, name: 'Bye' })).body.data.id as string
  const appUrl = `/api/projects/${projectId}/backend/apps/${(await call(first.app, 'POST', `/api/projects/${projectId}/backend/apps`, owner.auth, { name: 'bye', healthCheckPath: '/healthz' })).body.data.id as string}`
  const live = await deploymentSettled(first.app, appUrl, owner.auth, (await call(first.app, 'POST', `${appUrl}/deployments`, owner.auth, { uploadId: await uploadSource(first.app, appUrl, owner.auth, packFixture(t, 'node-hello')) })).body.data.id)
  t.equal(live.state, 'live')
  const [instance] = await first.app.hosting.releases.live(live.id)
  const leader = Number(instance.running?.handle)
  t.ok(isAlive(leader), 'the instance runs')

  await first.close()
  t.notOk(isAlive(leader), 'closing the server stopped it')
  t.same(first.logged(STOPPED).map((entry) => entry.instances), [1], 'and the shutdown log says so')
  t.same(first.logged(KEPT), [])

  const second = await serverApp(t, env)
  const stopped = await second.app.hosting.releases.listForApp(instance.appId, live.id)
  t.match(stopped.find((one) => one._id === instance._id), { state: 'stopped', reason: 'the server shut down (HOSTING_STOP_APPS_ON_EXIT)' }, 'recorded as stopped, and why')
  const port = second.app.hosting.gatewayPort() as number
  await waitFor('the app to run again', async () => (await viaGateway(port, 'bye.apps.localhost')).status, (status) => status === 200)
  const [again] = await second.app.hosting.releases.live(live.id)
  t.not(again._id, instance._id, 'a new instance of the live deployment, started by the next start')
})
