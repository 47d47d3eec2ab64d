import t, { type Test } from 'tap'
import { setImmediate as nextTurn } from 'node:timers/promises'
import { buildTestApp, call, orgWithRoles, type TestApp } from '../../helper.js'
import type { DeploymentT } from '../../../schemas/hosting.js'
import { packFixture, uploadSource, viaGateway } from './fixtures.js'

/**
 * The deployment as a client sees it, read again every event-loop turn (no
 * pause a step of the release could hide in), until it has settled: the
 * first answer past `releasing` is the moment the API says `live`.
 */
async function firstSettledAnswer (app: TestApp, appUrl: string, auth: Record<string, string>, deploymentId: string): Promise<DeploymentT> {
  const deadline = Date.now() + 120_000
  for (;;) {
    const deployment = (await call(app, 'GET', `${appUrl}/deployments/${deploymentId}`, auth)).body.data as DeploymentT
    if (!['queued', 'building', 'releasing'].includes(deployment.state)) return deployment
    if (Date.now() > deadline) throw new Error(`deployment ${deploymentId} still ${deployment.state}`)
    await nextTurn()
  }
}

/**
 * Issue of the 502 right after a deploy: "live" is a promise that the
 * gateway routes to the deployment. The route switches before the state is
 * written, so no client can read `live` and then be answered by the route
 * the app had before (none, a 502 or 404; or the previous deployment).
 */
t.test('a deployment the API reports live is already what the gateway routes to', async (t) => {
  const app = await buildTestApp(t, { env: { GATEWAY_PORT: '0' } })
  const { owner, orgId } = await orgWithRoles(app)
  const projectId = (await call(app, 'POST', '/api/projects', owner.auth, { orgId, name: 'Live' })).body.data.id as string
  const base = `/api/projects/${projectId}/backend`
  const port = app.hosting.gatewayPort() as number
  const deploy = async (t: Test, appUrl: string, uploadId: string): Promise<string> => {
    const id = (await call(app, 'POST', `${appUrl}/deployments`, owner.auth, { uploadId })).body.data.id as string
    const settled = await firstSettledAnswer(app, appUrl, owner.auth, id)
    t.equal(settled.state, 'live', `deployment ${id} went live`)
    return id
  }

  t.test('a container app, first deploy and a switch', async (t) => {
    const appUrl = `${base}/apps/${(await call(app, 'POST', `${base}/apps`, owner.auth, { name: 'probe' })).body.data.id as string}`
    const uploadId = await uploadSource(app, appUrl, owner.auth, packFixture(t, 'probe-app'))
    let previous: string | null = null
    for (const which of ['first', 'second']) {
      const id = await deploy(t, appUrl, uploadId)
      // Read before anything else can run: what the gateway would answer the next request with.
      const route = app.hosting.routes.resolve('probe.apps.localhost')
      t.equal((await call(app, 'GET', appUrl, owner.auth)).body.data.state, 'running', `${which}: the app reads running`)
      if (previous !== null) {
        t.equal((await call(app, 'GET', `${appUrl}/deployments/${previous}`, owner.auth)).body.data.state, 'superseded', `${which}: the one it replaced no longer reads live`)
      }
      previous = id
      const instances = (await app.hosting.releases.live(id)).map((instance) => instance._id)
      t.same(route?.kind === 'app' ? route.upstreams.map((upstream) => upstream.instanceId) : route, instances, `${which}: the route holds the live deployment's instances`)
      const answer = await viaGateway(port, 'probe.apps.localhost', '/env')
      t.same([answer.status, answer.status === 200 ? (JSON.parse(answer.body) as Record<string, string>).PLINTH_DEPLOYMENT_ID : answer.body], [200, id], `${which}: the gateway answers from the live deployment`)
    }
  })

  t.test('a static app, first deploy and a switch', async (t) => {
    const siteUrl = `${base}/static-apps/${(await call(app, 'POST', `${base}/static-apps`, owner.auth, { name: 'site' })).body.data.id as string}`
    const uploadId = await uploadSource(app, siteUrl, owner.auth, packFixture(t, 'static-site'))
    for (const which of ['first', 'second']) {
      const id = await deploy(t, siteUrl, uploadId)
      const route = app.hosting.routes.resolve('site.apps.localhost')
      t.equal(route?.kind === 'static' ? route.deploymentId : route, id, `${which}: the route serves the live deployment's tree`)
      t.equal((await viaGateway(port, 'site.apps.localhost')).status, 200, `${which}: the gateway answers`)
    }
  })
})
