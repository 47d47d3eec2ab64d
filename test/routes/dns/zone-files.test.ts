import t from 'tap'
import { readFileSync } from 'node:fs'
import { buildTestApp, call, orgWithRoles } from '../../helper.js'
import { dig } from '../../services/dns/dig.js'

const BIND_STYLE = readFileSync(new URL('../../fixtures/example.org.zone', import.meta.url), 'utf8')

t.test('a BIND-style file imports, is served, exports, and round-trips', async (t) => {
  const app = await buildTestApp(t, { env: { DNS_PORT: '0' } })
  const { owner, viewer, orgId } = await orgWithRoles(app)
  const projectId = (await call(app, 'POST', '/api/projects', owner.auth, { orgId, name: 'Site' })).body.data.id as string
  const base = `/api/projects/${projectId}/dns`

  t.equal((await call(app, 'POST', `${base}/zones/import`, viewer.auth, { zoneFile: BIND_STYLE })).status, 403)
  const imported = await call(app, 'POST', `${base}/zones/import`, owner.auth, { zoneFile: BIND_STYLE })
  t.equal(imported.status, 201)
  t.match(imported.body.data, { name: 'example.org', providerId: 'builtin' })
  const zoneId = imported.body.data.id as string
  t.equal(imported.headers.location, `${base}/zones/${zoneId}`)
  const records = (await call(app, 'GET', `${base}/records?zoneId=${zoneId}`, owner.auth)).body.data as Array<{ name: string, type: string, content: string }>
  t.same(records.filter((record) => record.type === 'NS').map((record) => record.content), ['ns1.plinth.localhost', 'ns2.plinth.localhost'], 'apex NS are ours, not the file\'s')
  t.equal(records.length, 1 + 2 + 14, 'SOA, our NS, and the file\'s other 14 records')

  const port = app.dns.server.address()?.port ?? 0
  t.same((await dig(port, 'dkim._domainkey.example.org', 'TXT')).answer, ['dkim._domainkey.example.org. 3600 IN TXT "v=DKIM1; k=rsa; p=MIGfMA0GCSqGSIb3DQEBAQUAA4GNADCBiQKBgQC"'])
  t.same((await dig(port, 'x.apps.example.org', 'A', '+tcp')).answer, ['x.apps.example.org. 3600 IN A 192.0.2.81'])

  const exported = await call(app, 'GET', `${base}/zones/${zoneId}/export`, viewer.auth)
  t.equal(exported.status, 200)
  t.match(exported.body.data.zoneFile, /^\$ORIGIN example\.org\.\n/)
  const url = `${base}/zones/${zoneId}/export`
  const asFile: Array<[string, string, Record<string, string>]> = [
    ['Accept: text/dns', url, { accept: 'text/dns' }],
    ['text/dns preferred over JSON', url, { accept: 'application/json;q=0.5, text/dns' }],
    ['?format=text', `${url}?format=text`, {}]
  ]
  for (const [name, target, headers] of asFile) {
    const file = await app.inject({ method: 'GET', url: target, headers: { ...viewer.auth, ...headers } })
    t.same([file.statusCode, file.headers['content-type'], file.headers['content-disposition']], [200, 'text/dns; charset=utf-8', 'attachment; filename="example.org.zone"'], name)
    t.equal(file.body, exported.body.data.zoneFile, `${name}: the master file itself`)
  }
  const asJson: Array<[string, string, Record<string, string>]> = [
    ['no Accept', url, {}],
    ['Accept: application/json', url, { accept: 'application/json' }],
    ['any type', url, { accept: '*/*' }],
    ['JSON preferred over text/dns', url, { accept: 'text/dns;q=0.2, application/json' }],
    ['?format=json over Accept', `${url}?format=json`, { accept: 'text/dns' }]
  ]
  for (const [name, target, headers] of asJson) {
    const res = await app.inject({ method: 'GET', url: target, headers: { ...viewer.auth, ...headers } })
    t.same([res.statusCode, res.headers['content-type'], res.json().data], [200, 'application/json; charset=utf-8', exported.body.data], `${name}: the envelope`)
  }
  t.same((await call(app, 'GET', `${url}?format=bind`, viewer.auth)).body.code, 'APP_VALIDATION_FAILED')
  t.equal((await call(app, 'DELETE', `${base}/zones/${zoneId}`, owner.auth)).status, 200)
  const again = await call(app, 'POST', `${base}/zones/import`, owner.auth, { zoneFile: exported.body.data.zoneFile })
  t.equal(again.status, 201)
  const reimported = (await call(app, 'GET', `${base}/records?zoneId=${again.body.data.id as string}`, owner.auth)).body.data as typeof records
  const shape = (list: typeof records) => list.filter((record) => record.type !== 'SOA').map((record) => ({ ...record, id: undefined, zoneId: undefined }))
  t.same(shape(reimported), shape(records), 'the same records after export and import')
})

t.test('an import is all or nothing, and its refusals are clear', async (t) => {
  const app = await buildTestApp(t)
  const { owner, orgId } = await orgWithRoles(app)
  const projectId = (await call(app, 'POST', '/api/projects', owner.auth, { orgId, name: 'Site' })).body.data.id as string
  const base = `/api/projects/${projectId}/dns`
  const cases: Array<[string, unknown, number, string]> = [
    ['a bad line', { zoneFile: '$ORIGIN a.example.\n$TTL 60\nwww A nope\n' }, 400, 'APP_DNS_ZONE_FILE_INVALID'],
    ['CNAME beside another record', { zoneFile: '$ORIGIN a.example.\n$TTL 60\nwww A 192.0.2.1\nwww CNAME x.example.net.\n' }, 409, 'APP_DNS_CNAME_CONFLICT'],
    ['a record outside the zone', { zoneFile: '$TTL 60\nwww.b.example. A 192.0.2.1\n', name: 'a.example' }, 400, 'APP_DNS_NAME_OUTSIDE_ZONE'],
    ['no origin', { zoneFile: 'www 60 A 192.0.2.1\n' }, 400, 'APP_DNS_ZONE_FILE_INVALID'],
    ['not a string', { zoneFile: 42 }, 400, 'APP_VALIDATION_FAILED']
  ]
  for (const [name, payload, status, code] of cases) {
    const res = await call(app, 'POST', `${base}/zones/import`, owner.auth, payload)
    t.same([res.status, res.body.code], [status, code], name)
  }
  t.same((await call(app, 'GET', `${base}/zones`, owner.auth)).body.data, [], 'no zone is left behind by a refused import')
  const named = await call(app, 'POST', `${base}/zones/import`, owner.auth, { zoneFile: '$TTL 60\nwww A 192.0.2.1\n@ MX 10 www\n', name: 'A.Example.' })
  t.same([named.status, named.body.data.name], [201, 'a.example'], 'the name given is the origin')
  t.equal((await call(app, 'GET', `${base}/zones/nozone/export`, owner.auth)).status, 404)
})
