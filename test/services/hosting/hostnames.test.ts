import t from 'tap'
import { randomBytes } from 'node:crypto'
import { buildTestApp, refusal } from '../../helper.js'
import { ManualClock } from '../../../services/platform/clock.js'
import { createIdGenerator } from '../../../services/platform/ids.js'
import { AppError } from '../../../services/platform/errors.js'
import { Gateway, type GatewayTarget } from '../../../services/dns/gateway.js'
import { Hostnames, type HostingEventKind, type VerifiedHostname } from '../../../services/hosting/hostnames.js'
import { MAX_HOSTNAMES_PER_APP } from '../../../schemas/hosting-hostnames.js'

const GATEWAY: GatewayTarget = { host: 'gw.plinth.test', ipv4: ['127.0.0.1'], ipv6: [] }

/**
 * One app for the file, its built-in DNS server on a free port; each test
 * gets its own hostnames service (and its own names and projects) on it.
 * Verification asks that server through node's resolver, as it would ask any
 * other.
 */
const app = await buildTestApp(t, { env: { DNS_PORT: '0', DNS_GATEWAY_HOST: GATEWAY.host ?? '', DNS_GATEWAY_IPV4: GATEWAY.ipv4.join(',') } })
const dnsPort = app.dns.server.address()?.port

async function hosting (options: { target?: GatewayTarget, resolvers?: string[] } = {}) {
  const clock = new ManualClock(Date.UTC(2026, 5, 1, 12))
  const events: Array<{ kind: HostingEventKind, hostname: string }> = []
  const released: VerifiedHostname[] = []
  const target = options.target ?? GATEWAY
  const gateway = options.target === undefined ? app.dns.gateway : new Gateway({ zones: app.dns.zones, records: app.dns.records, target, ownershipKey: randomBytes(32) })
  const hostnames = new Hostnames(app.store, {
    clock,
    newId: createIdGenerator(() => clock.nowMs()),
    gateway,
    target,
    resolvers: options.resolvers ?? [`127.0.0.1:${dnsPort ?? 0}`],
    reservedHosts: [...app.config.dns.nameservers, 'gw.plinth.test'],
    onEvent: (kind, details) => { events.push({ kind, hostname: details.hostname }) }
  })
  await hostnames.init()
  hostnames.onRelease(async (hostname) => { released.push(hostname) })
  return { hostnames, gateway, clock, events, released }
}

t.test('bind answers the records; verify lists what is missing, then succeeds once the zone holds them', async (t) => {
  const { hostnames, events } = await hosting()
  const zone = await app.dns.zones.create('p1', { name: 'shop.test' })
  const { hostname, instructions } = await hostnames.bind('p1', 'app1', 'WWW.Shop.Test.')
  t.match(hostname, { appId: 'app1', hostname: 'www.shop.test', status: 'pending', verifiedAt: null, lastCheck: null })
  t.same(instructions.records.map((record) => [record.purpose, record.type, record.name, record.content, record.present]), [
    ['route', 'CNAME', 'www.shop.test', 'gw.plinth.test', false],
    ['ownership', 'TXT', '_plinth-verify.www.shop.test', app.dns.gateway.ownershipValue('p1', 'www.shop.test'), false]
  ])

  const missing = await refusal(hostnames.verify('p1', 'app1', 'www.shop.test'))
  t.same([missing.status, missing.code], [409, 'APP_HOSTING_HOSTNAME_UNVERIFIED'])
  t.same(missing.details?.fields?.map((field) => field.path), ['www.shop.test CNAME', '_plinth-verify.www.shop.test TXT'], 'each missing record named')
  t.match(missing.details?.fields?.[0].message, /has no CNAME, A or AAAA record; expected gw\.plinth\.test/)
  t.match(await hostnames.get('p1', 'app1', 'www.shop.test'), { status: 'pending', lastCheck: { ok: false, records: [{ ok: false }, { ok: false }] } }, 'the failed check is kept')

  await app.dns.records.create(zone, { name: 'www', type: 'CNAME', content: 'gw.plinth.test' })
  const half = await refusal(hostnames.verify('p1', 'app1', 'www.shop.test'))
  t.same(half.details?.fields?.map((field) => field.path), ['_plinth-verify.www.shop.test TXT'], 'only the ownership TXT is left')

  await app.dns.records.create(zone, { name: '_plinth-verify.www', type: 'TXT', content: 'plinth-verify=someone-elses-claim' })
  const wrong = await refusal(hostnames.verify('p1', 'app1', 'www.shop.test'))
  t.match(wrong.details?.fields?.[0].message, /does not hold the expected value/)

  await app.dns.gateway.apply('p1', 'www.shop.test')
  const verified = await hostnames.verify('p1', 'app1', 'www.shop.test')
  t.match(verified, { status: 'verified', verifiedAt: '2026-06-01T12:00:00.000Z', lastCheck: { ok: true } })
  t.same(verified.lastCheck?.records[0].found, ['CNAME gw.plinth.test'])
  t.same(verified.lastCheck?.records[1].found.sort(), [app.dns.gateway.ownershipValue('p1', 'www.shop.test'), 'plinth-verify=someone-elses-claim'].sort(), 'other TXT values beside ours do no harm')
  t.same(await hostnames.verifiedRoutes(), [{ hostname: 'www.shop.test', projectId: 'p1', appId: 'app1' }])
  t.same((await hostnames.verify('p1', 'app1', 'www.shop.test')).status, 'verified', 'verifying again is harmless')
  t.same(events.map((event) => event.kind), ['hostname.bound', 'hostname.verification_failed', 'hostname.verification_failed', 'hostname.verification_failed', 'hostname.verified'])
  t.same((await hostnames.instructions('p1', 'app1', 'www.shop.test')).instructions.records.map((record) => record.present), [true, true])
})

t.test('an apex routes by address: the gateway\'s are accepted, anyone else\'s are named', async (t) => {
  const { hostnames } = await hosting()
  const zone = await app.dns.zones.create('pa', { name: 'apex.test' })
  const { instructions } = await hostnames.bind('pa', 'app1', 'apex.test')
  t.same(instructions.records.map((record) => `${record.type} ${record.content}`)[0], 'A 127.0.0.1')
  await app.dns.records.change(zone, {
    create: [
      { name: '@', type: 'A', content: '127.0.0.1' },
      { name: '@', type: 'A', content: '192.0.2.9' },
      { name: '_plinth-verify', type: 'TXT', content: app.dns.gateway.ownershipValue('pa', 'apex.test') }
    ]
  })
  const stray = await refusal(hostnames.verify('pa', 'app1', 'apex.test'))
  t.match(stray.message, /points at 192\.0\.2\.9, not at the gateway/)
  const strayId = (await app.dns.records.list(zone, { type: 'A' })).find((record) => record.content === '192.0.2.9')?.id ?? ''
  await app.dns.records.change(zone, { delete: [strayId] })
  t.match(await hostnames.verify('pa', 'app1', 'apex.test'), { status: 'verified', lastCheck: { records: [{ found: ['A 127.0.0.1'] }] } })
})

t.test('a CNAME elsewhere is named; without configured addresses the gateway host is resolved', async (t) => {
  const target = { host: 'edge.infra.test', ipv4: [], ipv6: [] }
  const { hostnames, gateway } = await hosting({ target })
  const infra = await app.dns.zones.create('ops', { name: 'infra.test' })
  await app.dns.records.create(infra, { name: 'edge', type: 'A', content: '127.0.0.1' })
  const zone = await app.dns.zones.create('pb', { name: 'blog.test' })
  await hostnames.bind('pb', 'app1', 'www.blog.test')
  await app.dns.records.change(zone, {
    create: [
      { name: 'www', type: 'CNAME', content: 'elsewhere.example.net' },
      { name: '_plinth-verify.www', type: 'TXT', content: gateway.ownershipValue('pb', 'www.blog.test') }
    ]
  })
  const elsewhere = await refusal(hostnames.verify('pb', 'app1', 'www.blog.test'))
  t.match(elsewhere.message, /is a CNAME to elsewhere\.example\.net, not to the gateway/)
  const cname = (await app.dns.records.list(zone, { type: 'CNAME' }))[0]
  await app.dns.records.change(zone, { delete: [cname.id], create: [{ name: 'www', type: 'A', content: '127.0.0.1' }] })
  t.match(await hostnames.verify('pb', 'app1', 'www.blog.test'), { status: 'verified' }, 'an address the gateway host resolves to counts')
})

t.test('a resolver that cannot answer is reported per record, not as a server error', async (t) => {
  const { hostnames } = await hosting({ resolvers: ['127.0.0.1:9'] })
  await app.dns.zones.create('pd', { name: 'down.test' })
  await hostnames.bind('pd', 'app1', 'www.down.test')
  const error = await refusal(hostnames.verify('pd', 'app1', 'www.down.test'))
  t.same([error.status, error.code], [409, 'APP_HOSTING_HOSTNAME_UNVERIFIED'])
  t.ok(error.details?.fields?.every((field) => /the resolver could not answer \(E[A-Z]+\)/.test(field.message)), JSON.stringify(error.details))
})

t.test('one hostname, one app, platform-wide', async (t) => {
  const { hostnames } = await hosting()
  await hostnames.bind('p1', 'app1', 'www.mall.test')
  const other = await refusal(hostnames.bind('p2', 'app9', 'www.mall.test'))
  t.same([other.status, other.code], [409, 'APP_HOSTING_HOSTNAME_TAKEN'])
  t.notMatch(other.message, /p1/, 'the holder is not revealed')
  t.same((await refusal(hostnames.bind('p1', 'app2', 'www.mall.test'))).code, 'APP_HOSTING_HOSTNAME_TAKEN', 'another app of the same project')
  t.same((await refusal(hostnames.bind('p1', 'app1', 'WWW.MALL.TEST'))).code, 'APP_HOSTING_HOSTNAME_BOUND')

  const race = await Promise.allSettled(['p3', 'p4', 'p5', 'p6'].map(async (projectId) => await hostnames.bind(projectId, 'a', 'race.example.org')))
  t.equal(race.filter((outcome) => outcome.status === 'fulfilled').length, 1, 'exactly one concurrent bind wins')
  t.ok(race.every((outcome) => outcome.status === 'fulfilled' || (outcome.reason as AppError).code === 'APP_HOSTING_HOSTNAME_TAKEN'))
})

t.test('names that are not hostnames, or are the platform\'s, are refused', async (t) => {
  const { hostnames } = await hosting()
  for (const input of ['localhost', 'not a host', '192.0.2.1', 'a_b.example.com', 'example.123', '-x.example.com', '*.example.com']) {
    const error = await refusal(hostnames.bind('p-refused', 'app1', input))
    t.same([error.status, error.code, error.details?.fields?.[0].path], [400, 'APP_HOSTING_INVALID_HOSTNAME', 'body.hostname'], input)
  }
  for (const input of ['gw.plinth.test', 'app.gw.plinth.test', 'ns1.plinth.localhost', 'deep.ns2.plinth.localhost']) {
    const error = await refusal(hostnames.bind('p-refused', 'app1', input))
    t.same([error.status, error.code], [409, 'APP_HOSTING_HOSTNAME_RESERVED'], input)
  }
  t.same(await hostnames.list('p-refused', 'app1'), [], 'nothing was kept')
})

t.test('a gateway without a host name refuses the bind and keeps nothing', async (t) => {
  const { hostnames } = await hosting({ target: { host: null, ipv4: [], ipv6: [] } })
  const error = await refusal(hostnames.bind('p-nogw', 'app1', 'www.example.org'))
  t.same([error.status, error.code], [409, 'APP_DNS_GATEWAY_NOT_CONFIGURED'])
  t.same(await hostnames.list('p-nogw', 'app1'), [])
})

t.test('an app carries a bounded number of hostnames', async (t) => {
  const { hostnames } = await hosting()
  for (let i = 0; i < MAX_HOSTNAMES_PER_APP; i++) await hostnames.bind('p-many', 'app1', `h${i}.example.org`)
  const error = await refusal(hostnames.bind('p-many', 'app1', 'one-more.example.org'))
  t.same([error.status, error.code, error.details?.limit], [409, 'APP_HOSTING_TOO_MANY_HOSTNAMES', MAX_HOSTNAMES_PER_APP])
  t.ok(await hostnames.bind('p-many', 'app2', 'one-more.example.org'), 'another app has its own allowance')
})

t.test('unbind, and the app or project going, release the names', async (t) => {
  const { hostnames, events, released } = await hosting()
  await hostnames.bind('pu1', 'app1', 'a.example.org')
  await hostnames.bind('pu1', 'app1', 'b.example.org')
  await hostnames.bind('pu1', 'app2', 'c.example.org')
  await hostnames.bind('pu2', 'app3', 'd.example.org')
  t.same((await hostnames.list('pu1', 'app1')).map((binding) => binding.hostname), ['a.example.org', 'b.example.org'])

  t.same((await refusal(hostnames.unbind('pu2', 'app1', 'a.example.org'))).code, 'APP_HOSTING_HOSTNAME_NOT_FOUND', 'another project cannot unbind it')
  await hostnames.unbind('pu1', 'app1', 'A.example.org')
  t.same((await refusal(hostnames.get('pu1', 'app1', 'a.example.org'))).status, 404)
  t.same((await refusal(hostnames.unbind('pu1', 'app1', 'a.example.org'))).code, 'APP_HOSTING_HOSTNAME_NOT_FOUND')
  t.same((await refusal(hostnames.verify('pu1', 'app1', 'a.example.org'))).code, 'APP_HOSTING_HOSTNAME_NOT_FOUND')
  t.ok(await hostnames.bind('pu2', 'app3', 'a.example.org'), 'the name is free again')

  await hostnames.deleteAllForApp('pu1', 'app1')
  t.same(await hostnames.list('pu1', 'app1'), [])
  t.same((await hostnames.list('pu1', 'app2')).length, 1, 'other apps keep theirs')
  await hostnames.deleteAllForProject('pu1')
  t.same(await hostnames.list('pu1', 'app2'), [])
  t.same((await hostnames.list('pu2', 'app3')).length, 2, 'other projects keep theirs')
  t.same(released.map((binding) => binding.hostname), ['a.example.org', 'b.example.org', 'c.example.org'])
  t.same(events.filter((event) => event.kind === 'hostname.unbound').map((event) => event.hostname), ['a.example.org', 'b.example.org', 'c.example.org'])
  t.same(await hostnames.holder('d.example.org'), { hostname: 'd.example.org', projectId: 'pu2', appId: 'app3', status: 'pending' })
  t.same(await hostnames.holder('nobody.example.org'), null)
})

t.test('pending hostnames are checked again by the recurring job until their records appear', async (t) => {
  const { hostnames, events } = await hosting()
  await app.dns.zones.create('p-auto', { name: 'auto.test' })
  await hostnames.bind('p-auto', 'app1', 'auto.test')
  const first = await hostnames.verifyPending()
  t.ok(first.pending.includes('auto.test'))
  t.notOk(first.verified.includes('auto.test'))
  t.match(await hostnames.get('p-auto', 'app1', 'auto.test'), { status: 'pending', lastCheck: { ok: false } }, 'the miss is kept')
  await app.dns.gateway.apply('p-auto', 'auto.test')
  t.same((await hostnames.verifyPending()).verified, ['auto.test'])
  t.match(await hostnames.get('p-auto', 'app1', 'auto.test'), { status: 'verified' })
  t.same(events.map((event) => event.kind), ['hostname.bound', 'hostname.verified'], 'the timeline hears of the verification, not of each miss')
  t.notOk((await hostnames.verifyPending()).pending.includes('auto.test'), 'verified names are not checked again')
})
