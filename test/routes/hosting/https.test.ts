import t from 'tap'
import { X509Certificate } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { request } from 'node:https'
import { join } from 'node:path'
import type { DetailedPeerCertificate, TLSSocket } from 'node:tls'
import { buildTestApp, call, orgWithRoles, tempDir } from '../../helper.js'
import { freePort, startPebble } from '../../services/hosting/pebble.js'
import { deploymentSettled, packFixture, uploadSource, viaGateway } from './fixtures.js'

/**
 * HTTPS end to end: a Node app deployed through the routes, a custom hostname
 * verified against the built-in DNS server, its certificate ordered through
 * the REST route from Debian's pebble (which validates HTTP-01 on the
 * gateway's plain-HTTP port), then served by the gateway's TLS listener to a
 * client that trusts pebble's root alone.
 */

interface TlsAnswer { status: number, body: string, headers: Record<string, string | string[] | undefined>, authorized: boolean, peer: DetailedPeerCertificate }

/** One HTTPS request to the gateway's TLS port on a fresh connection, with `servername` as SNI and Host. */
async function overTls (port: number, servername: string, ca: string, path = '/'): Promise<TlsAnswer> {
  return await new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, servername, ca, headers: { host: servername }, agent: false, timeout: 10_000 }, (res) => {
      const socket = res.socket as TLSSocket
      const peer = socket.getPeerCertificate(true)
      const chunks: Buffer[] = []
      res.on('data', (chunk: Buffer) => chunks.push(chunk))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString(), headers: res.headers, authorized: socket.authorized, peer }))
      res.on('error', reject)
    })
    req.on('timeout', () => req.destroy(new Error(`timed out: ${servername}`)))
    req.on('error', reject)
    req.end()
  })
}

t.test('a certificate from pebble, issued through the route over HTTP-01 and served by the gateway by SNI', async (t) => {
  const [dnsPort, gatewayPort, tlsPort] = [await freePort(), await freePort(), await freePort()]
  const pebble = await startPebble(t, { httpPort: gatewayPort, dnsPort })
  const caFile = join(tempDir(t, 'plinth-https-'), 'pebble-listener.pem')
  writeFileSync(caFile, pebble.listenerCa)
  const app = await buildTestApp(t, {
    env: {
      GATEWAY_PORT: String(gatewayPort),
      GATEWAY_TLS_PORT: String(tlsPort),
      DNS_PORT: String(dnsPort),
      DNS_GATEWAY_HOST: 'gw.plinth.test',
      DNS_GATEWAY_IPV4: '127.0.0.1',
      HOSTING_DNS_RESOLVERS: `127.0.0.1:${dnsPort}`,
      HOSTING_ACME_DIRECTORY_URL: pebble.directoryUrl,
      HOSTING_ACME_CA_FILE: caFile,
      HOSTING_ACME_EMAIL: 'ops@plinth.test'
    }
  })
  const { owner, viewer, orgId } = await orgWithRoles(app)
  const projectId = (await call(app, 'POST', '/api/projects', owner.auth, { orgId, name: 'Shop' })).body.data.id as string
  const base = `/api/projects/${projectId}/backend`
  const appUrl = `${base}/apps/${(await call(app, 'POST', `${base}/apps`, owner.auth, { name: 'shop', healthCheckPath: '/healthz' })).body.data.id as string}`
  const deployment = await call(app, 'POST', `${appUrl}/deployments`, owner.auth, { uploadId: await uploadSource(app, appUrl, owner.auth, packFixture(t, 'node-hello')) })
  t.equal((await deploymentSettled(app, appUrl, owner.auth, deployment.body.data.id)).state, 'live')

  // An apex name, so its route is an A record to DNS_GATEWAY_IPV4: where pebble reaches the gateway for HTTP-01.
  const hostname = 'shop.test'
  t.equal((await call(app, 'POST', `${appUrl}/hostnames`, owner.auth, { hostname })).status, 201)
  await call(app, 'POST', `/api/projects/${projectId}/dns/zones`, owner.auth, { name: hostname })
  t.equal((await call(app, 'POST', `/api/projects/${projectId}/dns/gateway-instructions/apply`, owner.auth, { hostname })).status, 200)
  t.match((await call(app, 'POST', `${appUrl}/hostnames/${hostname}/verify`, owner.auth)).body.data, { hostname, status: 'verified' })
  t.equal((await viaGateway(gatewayPort, hostname)).status, 200, 'routed over plain HTTP before it has a certificate')
  await t.rejects(overTls(tlsPort, hostname, await pebble.issuingRoot()), { code: 'EPROTO' }, 'no certificate yet: no handshake')

  const issued = await call(app, 'POST', `${appUrl}/hostnames/${hostname}/certificate`, owner.auth, { challenge: 'http-01' })
  t.match([issued.status, issued.body.data], [200, { hostname, status: 'issued', challenge: 'http-01', lastError: null }], pebble.output().slice(-2000))
  const root = await pebble.issuingRoot()

  const secure = await overTls(tlsPort, hostname, root)
  t.equal(secure.status, 200)
  t.match(secure.body, /^hello /, 'the app answers over HTTPS')
  t.ok(secure.authorized, 'the chain verifies against pebble\'s root, the only CA the client trusts')
  t.equal(secure.peer.subjectaltname, `DNS:${hostname}`)
  t.equal(new X509Certificate(secure.peer.raw).checkHost(hostname), hostname)
  t.equal(new Date(secure.peer.valid_to).toISOString(), issued.body.data.notAfter, 'the certificate the route reported is the one served')
  t.not(secure.peer.issuerCertificate.fingerprint256, secure.peer.fingerprint256, 'served with its intermediate')
  await t.rejects(overTls(tlsPort, hostname, pebble.listenerCa), { code: 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY' }, 'a client that does not trust pebble\'s root refuses it')

  const handshakeFailure = { code: 'EPROTO', message: /alert handshake failure/ }
  await t.rejects(overTls(tlsPort, 'unknown.test', root), handshakeFailure, 'an unknown name gets no certificate')
  await t.rejects(overTls(tlsPort, 'shop.apps.localhost', root), handshakeFailure, 'nor does a routed name without one')

  const redirected = await viaGateway(gatewayPort, hostname, '/built?from=http')
  t.same([redirected.status, redirected.headers.location], [308, `https://${hostname}:${tlsPort}/built?from=http`], 'plain HTTP to the name is sent to HTTPS')
  const location = new URL(redirected.headers.location as string)
  t.match((await overTls(Number(location.port), location.hostname, root, location.pathname)).body, /^built at /, 'where the same path answers')
  t.equal((await viaGateway(gatewayPort, 'shop.apps.localhost')).status, 200, 'the name without a certificate stays on plain HTTP')

  // Renewal: the order runs while plain HTTP redirects, so the CA reaching the challenge proves the exception, and the next handshake presents the new certificate.
  const renewed = await call(app, 'POST', `${appUrl}/hostnames/${hostname}/certificate`, owner.auth, { challenge: 'http-01' })
  t.match([renewed.status, renewed.body.data], [200, { status: 'issued', challenge: 'http-01', lastError: null }], pebble.output().slice(-2000))
  t.not(renewed.body.data.issuedAt, issued.body.data.issuedAt)
  const afterRenewal = await overTls(tlsPort, hostname, root)
  t.not(afterRenewal.peer.serialNumber, secure.peer.serialNumber, 'a new connection sees the renewed certificate, without a restart')
  const stored = app.hosting.certificates.certificateFor(hostname)
  t.equal(afterRenewal.peer.serialNumber, new X509Certificate(stored?.cert ?? '').serialNumber, 'the one the service holds now')
  t.equal(afterRenewal.status, 200)

  t.match((await call(app, 'GET', `${appUrl}/certificates`, viewer.auth)).body.data, [{ hostname, status: 'issued', notAfter: renewed.body.data.notAfter }])
  const timeline = (await call(app, 'GET', `${appUrl}/timeline?limit=200`, owner.auth)).body.data.map((event: { type: string }) => event.type)
  for (const kind of ['certificate.issued', 'certificate.renewed']) t.ok(timeline.includes(kind), `the timeline has ${kind}`)
})
