import t from 'tap'
import { createServer } from 'node:net'
import { buildTestApp, call, orgWithRoles } from '../../helper.js'
import { VERIFY_PENDING_JOB } from '../../../services/hosting/hostnames.js'
import { deploymentSettled, packFixture, uploadSource, viaGateway, waitFor } from './fixtures.js'

async function freePort (): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise((resolve) => server.close(resolve))
  return port
}

t.test('a custom hostname: bound with its records, verified against the built-in DNS server, routed by the gateway, unbound', async (t) => {
  const dnsPort = await freePort()
  const app = await buildTestApp(t, { env: { GATEWAY_PORT: '0', DNS_PORT: String(dnsPort), DNS_GATEWAY_HOST: 'gw.plinth.test', HOSTING_DNS_RESOLVERS: `127.0.0.1:${dnsPort}` } })
  const { owner, member, viewer, orgId } = await orgWithRoles(app)
  const projectId = (await call(app, 'POST', '/api/projects', owner.auth, { orgId, name: 'Site' })).body.data.id as string
  const base = `/api/projects/${projectId}/backend`
  const siteUrl = `${base}/static-apps/${(await call(app, 'POST', `${base}/static-apps`, owner.auth, { name: 'site' })).body.data.id as string}`
  const deployment = await call(app, 'POST', `${siteUrl}/deployments`, member.auth, { uploadId: await uploadSource(app, siteUrl, member.auth, packFixture(t, 'static-site')) })
  t.equal((await deploymentSettled(app, siteUrl, owner.auth, deployment.body.data.id)).state, 'live')
  const port = app.hosting.gatewayPort() as number
  t.equal((await viaGateway(port, 'site.apps.localhost')).status, 200)

  t.same([(await call(app, 'POST', `${siteUrl}/hostnames`, member.auth, { hostname: 'www.site.test' })).body.details.permission], ['hosting.manage'])
  t.same([(await call(app, 'POST', `${siteUrl}/hostnames`, owner.auth, { hostname: 'other.apps.localhost' })).body.code], ['APP_HOSTING_HOSTNAME_RESERVED'], 'the apps domain is the platform\'s')
  const bound = await call(app, 'POST', `${siteUrl}/hostnames`, owner.auth, { hostname: 'WWW.site.test' })
  t.equal(bound.status, 201)
  t.match(bound.body.data, { hostname: { hostname: 'www.site.test', status: 'pending' }, instructions: { records: [{ type: 'CNAME', content: 'gw.plinth.test' }, { type: 'TXT', purpose: 'ownership' }] } })
  t.equal(bound.headers.location, `${siteUrl}/hostnames/www.site.test`)
  t.same((await call(app, 'GET', `${siteUrl}/domains`, viewer.auth)).body.data.map((one: { hostname: string }) => one.hostname), ['www.site.test'], 'domains is the same list')
  t.equal((await viaGateway(port, 'www.site.test')).status, 404, 'pending: not routed')

  const unverified = await call(app, 'POST', `${siteUrl}/domains/www.site.test/verify`, owner.auth)
  t.same([unverified.status, unverified.body.code], [409, 'APP_HOSTING_HOSTNAME_UNVERIFIED'])
  await call(app, 'POST', `/api/projects/${projectId}/dns/zones`, owner.auth, { name: 'site.test' })
  t.equal((await call(app, 'POST', `/api/projects/${projectId}/dns/gateway-instructions/apply`, owner.auth, { hostname: 'www.site.test' })).status, 200)
  const verified = await call(app, 'POST', `${siteUrl}/hostnames/www.site.test/verify`, owner.auth)
  t.match([verified.status, verified.body.data], [200, { hostname: 'www.site.test', status: 'verified' }])
  const served = await viaGateway(port, 'www.site.test')
  t.same([served.status, served.body], [200, (await viaGateway(port, 'site.apps.localhost')).body], 'the verified name serves the app')
  t.match((await call(app, 'GET', `${siteUrl}/hostnames/www.site.test`, viewer.auth)).body.data.instructions.records, [{ present: true }, { present: true }])
  t.same([(await call(app, 'POST', `${siteUrl}/hostnames/www.site.test/certificate`, owner.auth, {})).body.code], ['APP_HOSTING_ACME_NOT_CONFIGURED'])
  t.same((await call(app, 'GET', `${siteUrl}/certificates`, viewer.auth)).body.data, [])

  t.equal((await call(app, 'POST', `${siteUrl}/domains`, owner.auth, { hostname: 'api.site.test' })).status, 201)
  await call(app, 'POST', `/api/projects/${projectId}/dns/gateway-instructions/apply`, owner.auth, { hostname: 'api.site.test' })
  await app.jobs.enqueue(VERIFY_PENDING_JOB)
  await waitFor('the pending name verified by the job and routed', async () => (await viaGateway(port, 'api.site.test')).status, (status) => status === 200)

  t.same((await call(app, 'DELETE', `${siteUrl}/domains/WWW.Site.test.`, owner.auth)).body.data, { id: 'www.site.test', deleted: true }, 'the answer names the hostname as bound')
  t.equal((await viaGateway(port, 'www.site.test')).status, 404, 'unbound: no longer routed')
  t.same([(await call(app, 'GET', `${siteUrl}/hostnames/www.site.test`, owner.auth)).body.code], ['APP_HOSTING_HOSTNAME_NOT_FOUND'])
  const timeline = (await app.hosting.timeline.list((await app.hosting.apps.get(projectId, siteUrl.split('/').pop() as string, 'static'))._id, 100)).map((event) => event.type)
  for (const kind of ['hostname.bound', 'hostname.verified', 'hostname.unbound']) t.ok(timeline.includes(kind), `the timeline has ${kind}`)
})
