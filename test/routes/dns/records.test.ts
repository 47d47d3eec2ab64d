import t from 'tap'
import { call, type TestApp } from '../../helper.js'
import { dnsSetup } from './fixtures.js'

type Headers = Record<string, string>

const serialOf = async (app: TestApp, base: string, zoneId: string, auth: Headers) => {
  const soa = (await call(app, 'GET', `${base}/records?zoneId=${zoneId}&type=SOA`, auth)).body.data[0]
  return Number(soa.content.split(' ')[2])
}

t.test('records: CRUD with canonical names, rules and a serial that moves on every change', async (t) => {
  const { app, owner, viewer, base, zoneId } = await dnsSetup(t)
  const serials = [await serialOf(app, base, zoneId, owner.auth)]
  const created = await call(app, 'POST', `${base}/records`, owner.auth, { zoneId, name: 'WWW', type: 'A', content: '192.0.2.10', ttl: 300 })
  t.equal(created.status, 201)
  t.match(created.body.data, { zoneId, name: 'www.example.com', type: 'A', ttl: 300, content: '192.0.2.10' })
  t.equal(created.headers.location, `${base}/records/${created.body.data.id as string}`)
  serials.push(await serialOf(app, base, zoneId, owner.auth))
  const id = created.body.data.id as string
  t.same((await call(app, 'GET', `${base}/records/${id}`, viewer.auth)).body.data, created.body.data)

  const refusals: Array<[string, Headers, unknown, number, string]> = [
    ['viewer', viewer.auth, { zoneId, name: 'x', type: 'A', content: '192.0.2.1' }, 403, 'APP_FORBIDDEN'],
    ['bad A', owner.auth, { zoneId, name: 'x', type: 'A', content: '300.0.0.1' }, 400, 'APP_DNS_INVALID_CONTENT'],
    ['outside', owner.auth, { zoneId, name: 'x.example.org.', type: 'A', content: '192.0.2.1' }, 400, 'APP_DNS_NAME_OUTSIDE_ZONE'],
    ['CNAME beside A', owner.auth, { zoneId, name: 'www', type: 'CNAME', content: 'example.net' }, 409, 'APP_DNS_CNAME_CONFLICT'],
    ['duplicate', owner.auth, { zoneId, name: 'www.example.com.', type: 'A', content: '192.0.2.10' }, 409, 'APP_DNS_RECORD_EXISTS'],
    ['TTL', owner.auth, { zoneId, name: 'x', type: 'A', content: '192.0.2.1', ttl: 1 }, 400, 'APP_VALIDATION_FAILED'],
    ['type', owner.auth, { zoneId, name: 'x', type: 'PTR', content: 'x' }, 400, 'APP_VALIDATION_FAILED'],
    ['SOA', owner.auth, { zoneId, name: '@', type: 'SOA', content: 'a b 1 2 3 4 5' }, 400, 'APP_DNS_SOA_MANAGED'],
    ['unknown zone', owner.auth, { zoneId: 'nozone', name: 'x', type: 'A', content: '192.0.2.1' }, 404, 'APP_DNS_ZONE_NOT_FOUND']
  ]
  for (const [name, headers, payload, status, code] of refusals) {
    const res = await call(app, 'POST', `${base}/records`, headers, payload)
    t.same([res.status, res.body.code], [status, code], name)
  }
  t.equal(await serialOf(app, base, zoneId, owner.auth), serials[1], 'refusals change nothing')

  const updated = await call(app, 'PUT', `${base}/records/${id}`, owner.auth, { name: 'www', type: 'A', content: '192.0.2.11' })
  t.match(updated.body.data, { name: 'www.example.com', content: '192.0.2.11', ttl: 300 })
  t.not(updated.body.data.id, id, 'new content, new id')
  serials.push(await serialOf(app, base, zoneId, owner.auth))
  t.equal((await call(app, 'GET', `${base}/records/${id}`, owner.auth)).status, 404)
  const gone = await call(app, 'DELETE', `${base}/records/${updated.body.data.id as string}`, owner.auth)
  t.equal(gone.status, 200)
  serials.push(await serialOf(app, base, zoneId, owner.auth))
  t.ok(serials.every((serial, index) => index === 0 || serial > serials[index - 1]), `serial strictly rises: ${serials.join(' < ')}`)
  t.same([(await call(app, 'DELETE', `${base}/records/${id}`, owner.auth)).status, (await call(app, 'GET', `${base}/records/bad`, owner.auth)).status], [404, 404])
  const elsewhere = await call(app, 'PUT', `${base}/records/nozone-abc`, owner.auth, { name: 'x', type: 'A', content: '192.0.2.1' })
  t.same([elsewhere.status, elsewhere.body.code], [404, 'APP_DNS_RECORD_NOT_FOUND'], 'a record of a zone that is not the project\'s')
  const soaId = (await call(app, 'GET', `${base}/records?zoneId=${zoneId}&type=SOA`, owner.auth)).body.data[0].id
  t.same((await call(app, 'DELETE', `${base}/records/${soaId as string}`, owner.auth)).body.code, 'APP_DNS_SOA_MANAGED')
})

t.test('bulk: every change lands together, or none does', async (t) => {
  const { app, owner, base, zoneId } = await dnsSetup(t)
  const www = (await call(app, 'POST', `${base}/records`, owner.auth, { zoneId, name: 'www', type: 'A', content: '192.0.2.1' })).body.data.id as string
  const before = await call(app, 'GET', `${base}/records?zoneId=${zoneId}`, owner.auth)
  const refused = await call(app, 'POST', `${base}/records/bulk`, owner.auth, {
    zoneId,
    create: [{ name: 'api', type: 'A', content: '192.0.2.5' }, { name: 'www', type: 'CNAME', content: 'example.net' }]
  })
  t.same([refused.status, refused.body.code], [409, 'APP_DNS_CNAME_CONFLICT'])
  t.same((await call(app, 'GET', `${base}/records?zoneId=${zoneId}`, owner.auth)).body.data, before.body.data, 'nothing of a refused change is kept')

  const done = await call(app, 'POST', `${base}/records/bulk`, owner.auth, {
    zoneId,
    delete: [www],
    create: [{ name: 'www', type: 'CNAME', content: 'example.net.' }, { name: '@', type: 'MX', content: '10 mail.example.com' }, { name: '_sip._tcp', type: 'SRV', content: '0 5 5060 sip.example.com' }],
    update: []
  })
  t.equal(done.status, 200)
  t.same(done.body.data.deleted, [www])
  t.same(done.body.data.written.map((record: { name: string, type: string }) => `${record.name} ${record.type}`), ['www.example.com CNAME', 'example.com MX', '_sip._tcp.example.com SRV'])
  const after = (await call(app, 'GET', `${base}/records?zoneId=${zoneId}&name=WWW.example.com.`, owner.auth)).body.data
  t.same(after.map((record: { type: string }) => record.type), ['CNAME'])
  const empty = await call(app, 'POST', `${base}/records/bulk`, owner.auth, { zoneId })
  t.same([empty.status, empty.body.code], [400, 'APP_DNS_EMPTY_CHANGE'])
  const wrongZone = await call(app, 'POST', `${base}/records/bulk`, owner.auth, { zoneId, delete: [`other-${www.split('-')[1]}`] })
  t.same([wrongZone.status, wrongZone.body.code], [404, 'APP_DNS_RECORD_NOT_FOUND'], 'a record of another zone is not in this one')
})
