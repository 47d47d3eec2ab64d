import t from 'tap'
import { buildTestApp, call, orgWithRoles } from '../../helper.js'
import { dig } from '../../services/dns/dig.js'

const GATEWAY = { DNS_PORT: '0', DNS_GATEWAY_HOST: 'gw.plinth.example', DNS_GATEWAY_IPV4: '192.0.2.80', DNS_GATEWAY_IPV6: '2001:db8::80' }

async function setup (t: Parameters<typeof buildTestApp>[0], env: Record<string, string>) {
  const app = await buildTestApp(t, { env })
  const roles = await orgWithRoles(app)
  const projectId = (await call(app, 'POST', '/api/projects', roles.owner.auth, { orgId: roles.orgId, name: 'Site' })).body.data.id as string
  return { app, ...roles, projectId, base: `/api/projects/${projectId}/dns` }
}

t.test('gateway instructions: what to create, whether hosted here, and apply', async (t) => {
  const { app, owner, viewer, projectId, base } = await setup(t, GATEWAY)
  const elsewhere = await call(app, 'GET', `${base}/gateway-instructions?hostname=App.Example.ORG.`, viewer.auth)
  t.equal(elsewhere.status, 200)
  const ownership = app.dns.gateway.ownershipValue(projectId, 'app.example.org')
  t.match(ownership, /^plinth-verify=[A-Za-z0-9_-]{32}$/)
  t.same(elsewhere.body.data, {
    hostname: 'app.example.org',
    apex: false,
    hostedHere: false,
    zone: null,
    records: [
      { name: 'app.example.org', type: 'CNAME', content: 'gw.plinth.example', ttl: 3600, purpose: 'route' },
      { name: '_plinth-verify.app.example.org', type: 'TXT', content: ownership, ttl: 3600, purpose: 'ownership' }
    ],
    acmeChallengeName: '_acme-challenge.app.example.org'
  })
  const apexElsewhere = (await call(app, 'GET', `${base}/gateway-instructions?hostname=example.org`, viewer.auth)).body.data
  t.same(apexElsewhere.records.map((record: { type: string, content: string }) => `${record.type} ${record.content}`), ['A 192.0.2.80', 'AAAA 2001:db8::80', `TXT ${app.dns.gateway.ownershipValue(projectId, 'example.org')}`])
  const notHosted = await call(app, 'POST', `${base}/gateway-instructions/apply`, owner.auth, { hostname: 'app.example.org' })
  t.same([notHosted.status, notHosted.body.code], [409, 'APP_DNS_ZONE_NOT_HOSTED'])

  const zoneId = (await call(app, 'POST', `${base}/zones`, owner.auth, { name: 'example.org' })).body.data.id as string
  const hosted = (await call(app, 'GET', `${base}/gateway-instructions?hostname=shop.example.org`, viewer.auth)).body.data
  t.match(hosted, { hostedHere: true, apex: false, zone: { id: zoneId, name: 'example.org', providerId: 'builtin', providerKind: 'builtin' } })
  t.same(hosted.records.map((record: { present: boolean }) => record.present), [false, false])
  t.equal((await call(app, 'POST', `${base}/gateway-instructions/apply`, viewer.auth, { hostname: 'shop.example.org' })).status, 403)
  const applied = await call(app, 'POST', `${base}/gateway-instructions/apply`, owner.auth, { hostname: 'shop.example.org' })
  t.equal(applied.status, 200)
  t.same(applied.body.data.records.map((record: { present: boolean }) => record.present), [true, true])
  const again = (await call(app, 'GET', `${base}/gateway-instructions?hostname=shop.example.org`, viewer.auth)).body.data
  t.same(again.records.map((record: { present: boolean }) => record.present), [true, true], 'the zone has them now')
  t.equal((await call(app, 'POST', `${base}/gateway-instructions/apply`, owner.auth, { hostname: 'shop.example.org' })).status, 200, 'applying twice changes nothing')

  const port = app.dns.server.address()?.port ?? 0
  t.same((await dig(port, 'shop.example.org', 'CNAME')).answer, ['shop.example.org. 3600 IN CNAME gw.plinth.example.'])
  t.same((await dig(port, '_plinth-verify.shop.example.org', 'TXT', '+tcp')).answer, [`_plinth-verify.shop.example.org. 3600 IN TXT "${app.dns.gateway.ownershipValue(projectId, 'shop.example.org')}"`])
  t.equal((await call(app, 'POST', `${base}/gateway-instructions/apply`, owner.auth, { hostname: 'example.org' })).status, 200, 'the apex gets A and AAAA')
  t.same((await dig(port, 'example.org', 'A')).answer, ['example.org. 3600 IN A 192.0.2.80'])

  await call(app, 'POST', `${base}/records`, owner.auth, { zoneId, name: 'taken', type: 'A', content: '192.0.2.1' })
  const blocked = await call(app, 'POST', `${base}/gateway-instructions/apply`, owner.auth, { hostname: 'taken.example.org' })
  t.same([blocked.status, blocked.body.code], [409, 'APP_DNS_CNAME_CONFLICT'], 'a record in the way is not replaced')
  const bad = await call(app, 'GET', `${base}/gateway-instructions?hostname=not a host`, viewer.auth)
  t.same([bad.status, bad.body.code], [400, 'APP_DNS_INVALID_NAME'])
})

t.test('without a configured gateway the instructions say so', async (t) => {
  const { app, viewer, base } = await setup(t, {})
  const sub = await call(app, 'GET', `${base}/gateway-instructions?hostname=app.example.org`, viewer.auth)
  t.same([sub.status, sub.body.code], [409, 'APP_DNS_GATEWAY_NOT_CONFIGURED'])
  const { base: hostOnly, app: app2, viewer: viewer2 } = await setup(t, { DNS_GATEWAY_HOST: 'gw.plinth.example' })
  const apex = (await call(app2, 'GET', `${hostOnly}/gateway-instructions?hostname=example.org`, viewer2.auth)).body.data
  t.same(apex.records[0], { name: 'example.org', type: 'ALIAS', content: 'gw.plinth.example', ttl: 3600, purpose: 'route' }, 'an apex elsewhere: an ALIAS where the provider has one')
})
