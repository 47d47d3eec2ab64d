import t from 'tap'
import { buildTestApp, call, orgWithRoles } from '../../helper.js'
import { deploymentSettled, packFixture, uploadSource, viaGateway, waitFor } from './fixtures.js'

t.test('an instance that dies is reported, restarted by the driver and routed again; a deployment canceled while it runs never goes live', async (t) => {
  const app = await buildTestApp(t, { env: { GATEWAY_PORT: '0', METRICS_TOKEN: 'lifecycle-metrics-token-0123' } })
  /** One series of a metrics family, by its labels, as a scrape would read it. */
  const metric = async (name: string, labels: Record<string, string>): Promise<number | undefined> =>
    (await app.metrics?.registry.registry.getSingleMetric(name)?.get())?.values.find((sample) => Object.entries(labels).every(([key, value]) => sample.labels[key] === value))?.value
  const { owner, orgId } = await orgWithRoles(app)
  const projectId = (await call(app, 'POST', '/api/projects', owner.auth, { orgId, name: 'Life' })).body.data.id as string
  const appUrl = `/api/projects/${projectId}/backend/apps/${(await call(app, 'POST', `/api/projects/${projectId}/backend/apps`, owner.auth, { name: 'life', healthCheckPath: '/healthz' })).body.data.id as string}`
  const port = app.hosting.gatewayPort() as number
  const uploadId = await uploadSource(app, appUrl, owner.auth, packFixture(t, 'node-hello'))
  const live = await deploymentSettled(app, appUrl, owner.auth, (await call(app, 'POST', `${appUrl}/deployments`, owner.auth, { uploadId })).body.data.id)
  t.equal(live.state, 'live')
  t.equal(await metric('plinth_hosting_instances_running', { driver: 'process' }), 1, 'metrics: one instance running')
  const appId = appUrl.split('/').pop() as string
  /** The histogram's count sample for the app and a status class. */
  const served = async (statusClass: string): Promise<number | undefined> =>
    (await app.metrics?.registry.registry.getSingleMetric('plinth_gateway_request_duration_seconds')?.get())?.values
      .find((sample) => (sample as { metricName?: string }).metricName === 'plinth_gateway_request_duration_seconds_count' && sample.labels.app === appId && sample.labels.status_class === statusClass)?.value
  const before = await served('2xx') ?? 0
  t.equal((await viaGateway(port, 'life.apps.localhost')).status, 200)
  t.equal((await viaGateway(port, 'life.apps.localhost', '/built')).status, 200)
  t.equal(await served('2xx'), before + 2, 'metrics: the gateway counts the app\'s answers by app and status class')
  t.equal(await served('5xx'), undefined, 'no series for a class it never answered')

  const [instance] = await app.hosting.releases.live(live.id)
  process.kill(-Number(instance.running?.handle), 'SIGKILL')
  const events = await waitFor('the restart', async () => (await call(app, 'GET', `${appUrl}/timeline?limit=50`, owner.auth)).body.data.map((event: { type: string }) => event.type), (types: string[]) => types.includes('instance.restarted'))
  t.ok(events.includes('instance.crashed'), 'the crash is on the timeline')
  await waitFor('routed again', async () => (await viaGateway(port, 'life.apps.localhost')).status, (status) => status === 200)
  // The route is rebuilt before the app's state is written from it (a client told `running` is routed): wait for both.
  const restarted = await waitFor('the app running again', async () => (await call(app, 'GET', appUrl, owner.auth)).body.data, (view) => view.state === 'running')
  t.match(restarted, { state: 'running', instances: [{ id: instance._id, state: 'running' }] }, 'the same instance, running again')
  t.same([await metric('plinth_hosting_instance_events_total', { driver: 'process', event: 'crashed' }), await metric('plinth_hosting_instance_events_total', { driver: 'process', event: 'restarted' })], [1, 1], 'metrics: the crash and the restart counted')
  t.equal(await metric('plinth_hosting_instances_running', { driver: 'process' }), 1, 'metrics: still one running')

  const next = (await call(app, 'POST', `${appUrl}/deployments`, owner.auth, { uploadId })).body.data.id as string
  await waitFor('the build to start', async () => (await call(app, 'GET', `${appUrl}/deployments/${next}`, owner.auth)).body.data.state, (state) => state !== 'queued')
  const asked = await call(app, 'POST', `${appUrl}/deployments/${next}/cancel`, owner.auth)
  t.equal(asked.status, 200)
  const settled = await deploymentSettled(app, appUrl, owner.auth, next)
  t.ok(settled.state === 'canceled' || settled.state === 'live', `canceled mid-way, or too late to (${settled.state})`)
  if (settled.state === 'canceled') {
    t.equal((await call(app, 'GET', appUrl, owner.auth)).body.data.liveDeploymentId, live.id, 'the live deployment stays')
    t.equal((await app.hosting.releases.live(next)).length, 0, 'nothing of the canceled one runs')
  }
  t.equal((await viaGateway(port, 'life.apps.localhost')).status, 200)

  t.equal((await call(app, 'DELETE', appUrl, owner.auth)).status, 200)
  t.equal(await served('2xx'), undefined, 'metrics: a deleted app\'s series go with it')
})
