import t from 'tap'
import { call } from '../../helper.js'
import { dnsSetup } from './fixtures.js'

type Headers = Record<string, string>

t.test('zones: created with SOA and NS, listed, refused when taken or overlapping', async (t) => {
  const { app, owner, viewer, outsider, base, zoneId, zone, orgId } = await dnsSetup(t)
  t.equal(zone.status, 201)
  t.match(zone.body.data, { name: 'example.com', providerId: 'builtin', providerKind: 'builtin', nameservers: ['ns1.plinth.localhost', 'ns2.plinth.localhost'] })
  t.equal(zone.headers.location, `${base}/zones/${zoneId}`)
  const records = (await call(app, 'GET', `${base}/records?zoneId=${zoneId}`, viewer.auth)).body.data
  t.same(records.map((record: { type: string }) => record.type), ['SOA', 'NS', 'NS'])
  t.equal((await call(app, 'GET', `${base}/zones`, viewer.auth)).body.data.length, 1)

  const other = (await call(app, 'POST', '/api/projects', owner.auth, { orgId, name: 'Other' })).body.data.id as string
  const refusals: Array<[string, Headers, string, unknown, number, string]> = [
    ['viewer creates', viewer.auth, base, { name: 'b.example' }, 403, 'APP_FORBIDDEN'],
    ['outsider creates', outsider.auth, base, { name: 'b.example' }, 404, 'APP_PROJECT_NOT_FOUND'],
    ['same name again', owner.auth, base, { name: 'EXAMPLE.com' }, 409, 'APP_DNS_ZONE_EXISTS'],
    ['inside another project\'s zone', owner.auth, `/api/projects/${other}/dns`, { name: 'shop.example.com' }, 409, 'APP_DNS_ZONE_OVERLAP'],
    ['around another project\'s zone', owner.auth, `/api/projects/${other}/dns`, { name: 'com.' }, 400, 'APP_DNS_INVALID_NAME'],
    ['bad name', owner.auth, base, { name: 'exa mple.com' }, 400, 'APP_DNS_INVALID_NAME'],
    ['unknown provider', owner.auth, base, { name: 'b.example', providerId: 'nope' }, 404, 'APP_DNS_PROVIDER_NOT_FOUND'],
    ['unknown field', owner.auth, base, { name: 'b.example', color: 'red' }, 400, 'APP_VALIDATION_FAILED'],
    ['around the server\'s nameservers', owner.auth, base, { name: 'plinth.localhost' }, 409, 'APP_DNS_ZONE_RESERVED'],
    ['a nameserver itself', owner.auth, base, { name: 'ns1.plinth.localhost' }, 409, 'APP_DNS_ZONE_RESERVED'],
    ['inside a nameserver\'s name', owner.auth, base, { name: 'x.ns2.plinth.localhost' }, 409, 'APP_DNS_ZONE_RESERVED'],
    ['inside the apps domain', owner.auth, base, { name: 'shop.apps.localhost' }, 409, 'APP_DNS_ZONE_RESERVED']
  ]
  for (const [name, headers, prefix, payload, status, code] of refusals) {
    const res = await call(app, 'POST', `${prefix}/zones`, headers, payload)
    t.same([res.status, res.body.code], [status, code], name)
  }
  const gatewayApp = await dnsSetup(t, { DNS_GATEWAY_HOST: 'gw.hosting.example', PUBLIC_URL: 'https://api.platform.example', HOSTING_APPS_DOMAIN: 'apps.run.example' })
  for (const name of ['hosting.example', 'platform.example', 'api.platform.example', 'run.example', 'apps.run.example']) {
    const res = await call(gatewayApp.app, 'POST', `${gatewayApp.base}/zones`, gatewayApp.owner.auth, { name })
    t.same([res.status, res.body.code], [409, 'APP_DNS_ZONE_RESERVED'], `${name}: the gateway's, the public URL's and the apps domain's names are the server's`)
  }
  const sub = await call(app, 'POST', `${base}/zones`, owner.auth, { name: 'shop.example.com' })
  t.equal(sub.status, 201, 'the same project may split its own zone')
  const theirs = await call(app, 'POST', `/api/projects/${other}/dns/zones`, owner.auth, { name: 'other.example' })
  t.equal(theirs.status, 201)
  t.equal((await call(app, 'GET', `${base}/zones/${theirs.body.data.id as string}`, owner.auth)).status, 404, 'another project\'s zone is not found here')
  t.equal((await call(app, 'DELETE', `${base}/zones/${sub.body.data.id as string}`, viewer.auth)).status, 403)
  t.same((await call(app, 'DELETE', `${base}/zones/nozone`, viewer.auth)).body.details, { permission: 'dns.manage' }, 'a member without dns.manage learns nothing of which zones exist')
  t.same((await call(app, 'DELETE', `${base}/zones/nozone`, owner.auth)).body.code, 'APP_DNS_ZONE_NOT_FOUND')
  const gone = await call(app, 'DELETE', `${base}/zones/${sub.body.data.id as string}`, owner.auth)
  t.same([gone.status, gone.body], [200, { success: true, data: { id: sub.body.data.id, deleted: true } }], 'the one delete answer')
  t.equal((await call(app, 'GET', `${base}/zones/${sub.body.data.id as string}`, owner.auth)).status, 404)
})

t.test('deleting a project takes its built-in zones with it', async (t) => {
  const { app, owner, projectId } = await dnsSetup(t)
  t.ok(await app.dns.builtin.zoneFor('www.example.com'))
  t.equal((await call(app, 'DELETE', `/api/projects/${projectId}`, owner.auth)).status, 200)
  t.equal(await app.dns.builtin.zoneFor('www.example.com'), null, 'no longer served')
})
