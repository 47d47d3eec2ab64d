import t, { type Test } from 'tap'
import { X509Certificate } from 'node:crypto'
import { createServer as createHttpServer } from 'node:http'
import { connect, createSecureContext, createServer as createTlsServer } from 'node:tls'
import { buildTestApp, refusal } from '../../helper.js'
import { systemClock } from '../../../services/platform/clock.js'
import { AppError } from '../../../services/platform/errors.js'
import { newId } from '../../../services/platform/ids.js'
import { Certificates } from '../../../services/hosting/certificates.js'
import { Hostnames, type HostingEventKind } from '../../../services/hosting/hostnames.js'
import type { HostedZone } from '../../../services/dns/zones.js'
import { startPebble } from './pebble.js'

/**
 * Certificates from Debian's pebble, for real: pebble validates HTTP-01 by
 * fetching from a plain HTTP server here that answers from the service's
 * ChallengeSource, and DNS-01 (and every hostname it resolves) by asking the
 * built-in DNS server, where the tests' zones live.
 */
const app = await buildTestApp(t, { env: { DNS_PORT: '0', DNS_GATEWAY_HOST: 'gw.plinth.test', DNS_GATEWAY_IPV4: '127.0.0.1' } })
const dnsPort = app.dns.server.address()?.port ?? 0
const events: Array<{ kind: HostingEventKind, hostname: string, problem?: unknown }> = []
const onEvent = (kind: HostingEventKind, details: { hostname: string, problem?: unknown }) => { events.push({ kind, hostname: details.hostname, problem: details.problem }) }
const hostnames = new Hostnames(app.store, {
  clock: systemClock, newId, gateway: app.dns.gateway, target: app.config.dns.gateway, resolvers: [`127.0.0.1:${dnsPort}`], reservedHosts: [], onEvent
})
await hostnames.init()

// The gateway's plain-HTTP port, as far as ACME needs it: challenge answers from the ChallengeSource.
const challengeRequests: string[] = []
let challenges: Certificates | null = null
const responder = createHttpServer((req, res) => {
  const token = /^\/\.well-known\/acme-challenge\/([\w-]+)$/.exec(req.url ?? '')?.[1]
  challengeRequests.push(`${req.headers.host ?? ''} ${req.url ?? ''}`)
  const answer = token === undefined ? null : challenges?.keyAuthorization(token) ?? null
  res.writeHead(answer === null ? 404 : 200, { 'content-type': 'text/plain' }).end(answer ?? 'not found')
})
await new Promise<void>((resolve) => responder.listen(0, '127.0.0.1', resolve))
t.teardown(() => { responder.close() })

const pebble = await startPebble(t, { httpPort: (responder.address() as { port: number }).port, dnsPort })
const acme = { directoryUrl: pebble.directoryUrl, email: 'ops@plinth.test', caCertificates: pebble.listenerCa, polling: { attempts: 20, minMs: 100, maxMs: 1000 } }
const certificates = new Certificates(app.store, { clock: systemClock, secrets: app.secrets, hostnames, dns: app.dns, acme, onEvent })
challenges = certificates
await certificates.init()
const root = await pebble.issuingRoot()

/** A hostname bound to an app, its records created in a zone of `zoneProject` on the built-in server, and verified. */
async function verifiedHostname (projectId: string, appId: string, hostname: string, zone: { name: string, project?: string }): Promise<HostedZone> {
  const zoneProject = zone.project ?? projectId
  const created = await app.dns.zones.create(zoneProject, { name: zone.name })
  const { instructions } = await hostnames.bind(projectId, appId, hostname)
  await app.dns.records.change(created, { create: instructions.records.map((record) => ({ name: `${record.name}.`, type: record.type as 'A' | 'CNAME' | 'TXT', content: record.content })) })
  await hostnames.verify(projectId, appId, hostname)
  return created
}

/** The served chain, checked link by link up to pebble's issuing root, and by a TLS client that trusts only that root. */
async function assertServedAndTrusted (t: Test, hostname: string): Promise<X509Certificate> {
  const served = certificates.certificateFor(hostname)
  if (served === null) throw new Error(`no certificate served for ${hostname}`)
  const chain = served.cert.split(/(?<=-----END CERTIFICATE-----)\s*/).filter((pem) => pem.includes('BEGIN')).map((pem) => new X509Certificate(pem))
  const trusted = new X509Certificate(root)
  const links = [...chain, trusted]
  for (let i = 0; i + 1 < links.length; i++) t.ok(links[i].verify(links[i + 1].publicKey) && links[i].checkIssued(links[i + 1]), `link ${i} is signed by the next`)
  t.equal(chain[0].checkHost(hostname), hostname)

  const server = createTlsServer({ SNICallback: (name, done) => { const found = certificates.certificateFor(name); done(null, found === null ? undefined : createSecureContext(found)) } }, (socket) => socket.end('hello over TLS'))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  try {
    const greeting = await new Promise<string>((resolve, reject) => {
      const socket = connect({ host: '127.0.0.1', port: (server.address() as { port: number }).port, servername: hostname, ca: root }, () => {
        if (!socket.authorized) reject(socket.authorizationError)
        socket.once('data', (data) => { resolve(data.toString()); socket.end() })
      })
      socket.on('error', reject)
    })
    t.equal(greeting, 'hello over TLS', 'a client trusting only pebble\'s root accepts the handshake')
  } finally {
    server.close()
  }
  return chain[0]
}

t.test('HTTP-01: the gateway\'s plain-HTTP port answers the CA and the certificate chains to pebble\'s root', async (t) => {
  await verifiedHostname('p1', 'app1', 'http.test', { name: 'http.test' })
  const issued = await certificates.issue('p1', 'app1', 'http.test', { challenge: 'http-01' })
  t.match(issued, { hostname: 'http.test', appId: 'app1', status: 'issued', challenge: 'http-01', lastError: null })
  t.ok(challengeRequests.some((line) => line.startsWith('http.test:') && line.includes('/.well-known/acme-challenge/')), challengeRequests.join('\n'))
  const leaf = await assertServedAndTrusted(t, 'http.test')
  t.equal(issued.notAfter, new Date(leaf.validTo).toISOString())
  t.ok(Date.parse(issued.renewAfter ?? '') < Date.parse(issued.notAfter ?? ''), 'renewed before it expires')

  const stored = await app.store.collection('hosting_certificates').findOne({ _id: 'http.test' })
  t.match(stored?.sealedKey, /^v1\./, 'the private key is sealed')
  t.notMatch(JSON.stringify(stored), /PRIVATE KEY/)
  const accounts = await app.store.collection('hosting_acme_accounts').find({}).toArray()
  t.same(accounts.map((account) => [account._id, /^v1\./.test(String(account.sealedKey)), typeof account.accountUrl]), [[pebble.directoryUrl, true, 'string']], 'one account, its key sealed')
  t.same(await certificates.list('p1', 'app1'), [issued])
  t.ok(events.some((event) => event.kind === 'certificate.issued' && event.hostname === 'http.test'))
})

t.test('DNS-01: the challenge TXT goes through the project\'s zone and is taken out again', async (t) => {
  const zone = await verifiedHostname('p2', 'app2', 'www.dns.test', { name: 'dns.test' })
  const issued = await certificates.issue('p2', 'app2', 'www.dns.test')
  t.match(issued, { status: 'issued', challenge: 'dns-01' }, 'DNS-01 is the default where the project hosts the zone')
  await assertServedAndTrusted(t, 'www.dns.test')
  t.same(await app.dns.records.list(zone, { name: '_acme-challenge.www.dns.test' }), [], 'the challenge record is gone')
})

t.test('renewal takes the certificates that are due, and only those', async (t) => {
  const before = await certificates.get('p1', 'app1', 'http.test')
  t.same(await certificates.renewDue(new Date()), { renewed: [], failed: [] }, 'nothing is due yet')
  const dnsBefore = await certificates.get('p2', 'app2', 'www.dns.test')
  const due = new Date(Math.max(Date.parse(before.renewAfter ?? ''), Date.parse(dnsBefore.renewAfter ?? '')) + 1000)
  const outcome = await certificates.renewDue(due)
  t.same(outcome.renewed.sort(), ['http.test', 'www.dns.test'])
  const after = await certificates.get('p1', 'app1', 'http.test')
  t.not(after.issuedAt, before.issuedAt)
  const leaf = await assertServedAndTrusted(t, 'http.test')
  t.equal(new Date(leaf.validTo).toISOString(), after.notAfter, 'the new certificate is the one served')
  t.ok(events.some((event) => event.kind === 'certificate.renewed' && event.hostname === 'www.dns.test'))

  const race = await Promise.allSettled([certificates.issue('p1', 'app1', 'http.test'), certificates.issue('p1', 'app1', 'http.test')])
  t.same(race.map((outcome) => outcome.status).sort(), ['fulfilled', 'rejected'])
  t.same(race.flatMap((outcome) => outcome.status === 'rejected' ? [(outcome.reason as AppError).code] : []), ['APP_HOSTING_CERTIFICATE_IN_PROGRESS'], 'one issue at a time per hostname')
})

t.test('a failing challenge is recorded with the CA\'s problem and retried later', async (t) => {
  const zone = await verifiedHostname('p3', 'app3', 'moved.test', { name: 'moved.test' })
  // The name moves away after it was verified: the CA can no longer reach the gateway there.
  const a = (await app.dns.records.list(zone, { type: 'A' }))[0]
  await app.dns.records.change(zone, { delete: [a.id], create: [{ name: '@', type: 'A', content: '127.0.0.2' }] })
  const failed = await refusal(certificates.issue('p3', 'app3', 'moved.test', { challenge: 'http-01' }))
  t.same([failed.status, failed.code], [502, 'APP_HOSTING_CERTIFICATE_FAILED'])
  const kept = await certificates.get('p3', 'app3', 'moved.test')
  t.match(kept, { status: 'failed', challenge: 'http-01', notAfter: null, lastError: { type: /^urn:ietf:params:acme:error:(connection|unauthorized)$/, detail: /127\.0\.0\.2/ } }, pebble.output().slice(-2000))
  t.equal(certificates.certificateFor('moved.test'), null)
  t.ok(events.some((event) => event.kind === 'certificate.failed' && event.hostname === 'moved.test'))

  const retry = new Date(Date.parse(kept.lastError?.at ?? '') + 2 * 3_600_000)
  t.same(await certificates.renewDue(retry), { renewed: [], failed: ['moved.test'] }, 'retried once the back-off has passed')
})

t.test('a directory that does not answer: the old certificate stays served, the failure is kept', async (t) => {
  const served = certificates.certificateFor('http.test')
  const broken = new Certificates(app.store, { clock: systemClock, secrets: app.secrets, hostnames, dns: app.dns, acme: { ...acme, directoryUrl: pebble.directoryUrl.replace(/\/dir$/, '/no-directory-here') } })
  for (let attempt = 0; attempt < 2; attempt++) {
    const failed = await refusal(broken.issue('p1', 'app1', 'http.test', { challenge: 'http-01' }))
    t.same([failed.status, failed.code], [502, 'APP_HOSTING_CERTIFICATE_FAILED'], `attempt ${attempt}: the account is tried again, not kept failed`)
  }
  t.match(await certificates.get('p1', 'app1', 'http.test'), { status: 'issued', lastError: { type: 'urn:plinth:acme:client', detail: /404/, status: null } })
  t.equal(certificates.certificateFor('http.test'), served)
})

t.test('two nodes opening the same directory share one account', async (t) => {
  const directoryUrl = `${pebble.directoryUrl}?shared`
  const nodes = [0, 1].map(() => new Certificates(app.store, { clock: systemClock, secrets: app.secrets, hostnames, dns: app.dns, acme: { ...acme, directoryUrl, email: null } }))
  await Promise.allSettled([nodes[0].issue('p1', 'app1', 'http.test', { challenge: 'http-01' }), nodes[1].issue('p3', 'app3', 'moved.test', { challenge: 'http-01' })])
  t.equal(await app.store.collection('hosting_acme_accounts').countDocuments({ _id: directoryUrl }), 1)
})

t.test('renewal drops a certificate whose hostname went without it', async (t) => {
  // As left by a release that stopped between the hostname and its certificate.
  await app.store.collection('hosting_certificates').insertOne({ _id: 'orphan.test', projectId: 'p1', appId: 'app1', hostname: 'orphan.test', nextAttemptAt: new Date(0), chain: null })
  t.same(await certificates.renewDue(new Date(1000)), { renewed: [], failed: [] })
  t.equal(await app.store.collection('hosting_certificates').findOne({ _id: 'orphan.test' }), null)
})

t.test('refusals before any order is placed', async (t) => {
  await hostnames.bind('p4', 'app4', 'pending.test')
  t.same([(await refusal(certificates.issue('p4', 'app4', 'pending.test'))).code], ['APP_HOSTING_HOSTNAME_NOT_VERIFIED'])
  t.same((await refusal(certificates.issue('p4', 'app4', 'nobody.test'))).status, 404)
  t.same((await refusal(certificates.issue('p9', 'app4', 'pending.test'))).code, 'APP_HOSTING_HOSTNAME_NOT_FOUND', 'another project\'s hostname')
  t.same((await refusal(certificates.get('p4', 'app4', 'pending.test'))).code, 'APP_HOSTING_CERTIFICATE_NOT_FOUND')
  t.same((await refusal(certificates.issue('p4', 'app4', 'not a name'))).code, 'APP_HOSTING_INVALID_HOSTNAME')

  await verifiedHostname('p4', 'app4', 'www.elsewhere.test', { name: 'elsewhere.test', project: 'p-dns' })
  t.same((await refusal(certificates.issue('p4', 'app4', 'www.elsewhere.test', { challenge: 'dns-01' }))).code, 'APP_HOSTING_ZONE_NOT_HOSTED')
  // HTTP-01 is the default here; the CA cannot follow the CNAME to a gateway host no server answers for, and says so.
  t.same((await refusal(certificates.issue('p4', 'app4', 'www.elsewhere.test'))).code, 'APP_HOSTING_CERTIFICATE_FAILED')
  t.match(await certificates.get('p4', 'app4', 'www.elsewhere.test'), { status: 'failed', challenge: 'http-01', lastError: { type: /^urn:ietf:params:acme:error:/ } })

  const unconfigured = new Certificates(app.store, { clock: systemClock, secrets: app.secrets, hostnames, dns: app.dns, acme: { directoryUrl: null, email: null, caCertificates: null } })
  t.same((await refusal(unconfigured.issue('p4', 'app4', 'www.elsewhere.test'))).code, 'APP_HOSTING_ACME_NOT_CONFIGURED')
})

t.test('another node sees the certificates from the Store; unbinding takes a certificate away', async (t) => {
  const otherNode = new Certificates(app.store, { clock: systemClock, secrets: app.secrets, hostnames, dns: app.dns, acme })
  t.equal(otherNode.certificateFor('www.dns.test'), null, 'not in view before it looks')
  for (let i = 0; i < 100 && otherNode.certificateFor('www.dns.test') === null; i++) await new Promise((resolve) => setTimeout(resolve, 10))
  t.equal(otherNode.certificateFor('www.dns.test')?.cert, certificates.certificateFor('www.dns.test')?.cert, 'loaded for the next handshake')
  t.equal(otherNode.certificateFor('unknown.test'), null)
  await otherNode.refresh()
  t.ok(otherNode.certificateFor('http.test'), 'refresh loads every issued certificate')

  await hostnames.unbind('p2', 'app2', 'www.dns.test')
  t.equal(certificates.certificateFor('www.dns.test'), null)
  t.same((await refusal(certificates.get('p2', 'app2', 'www.dns.test'))).status, 404)
  t.equal(await app.store.collection('hosting_certificates').findOne({ _id: 'www.dns.test' }), null, 'nothing left to renew')
})
