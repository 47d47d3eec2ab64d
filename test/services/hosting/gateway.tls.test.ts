import t from 'tap'
import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { request, type RequestOptions } from 'node:https'
import { join } from 'node:path'
import { promisify } from 'node:util'
import type { TLSSocket } from 'node:tls'
import { tempDir } from '../../helper.js'
import { httpsUrl } from '../../../services/hosting/gateway/host.js'
import { appRoute, ask, echoUpstream, raw, startGateway, upgradeRequest, type Answer } from './gateway-harness.js'

/**
 * TLS on the gateway's HTTPS port with certificates chosen by SNI, against
 * self-signed certificates made with openssl, and ACME HTTP-01 answers on
 * the plain port.
 */

const run = promisify(execFile)

async function selfSigned (dir: string, name: string, altNames: string[]): Promise<{ key: string, cert: string }> {
  const key = join(dir, `${name}.key`)
  const cert = join(dir, `${name}.crt`)
  await run('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', key, '-out', cert, '-days', '2',
    '-subj', `/CN=${altNames[0]}`, '-addext', `subjectAltName=${altNames.map((alt) => `DNS:${alt}`).join(',')}`])
  return { key: readFileSync(key, 'utf8'), cert: readFileSync(cert, 'utf8') }
}

interface SecureAnswer extends Answer { peerSerial: string }

async function askTls (port: number, options: RequestOptions & { host?: string }, ca: string[]): Promise<SecureAnswer> {
  return await new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/', agent: false, ca, ...options }, (res) => {
      const serial = (res.socket as TLSSocket).getPeerCertificate().serialNumber
      const chunks: Buffer[] = []
      res.on('data', (chunk: Buffer) => chunks.push(chunk))
      res.on('end', () => resolve({ status: res.statusCode as number, headers: res.headers, rawHeaders: res.rawHeaders, body: Buffer.concat(chunks).toString(), peerSerial: serial }))
    })
    req.on('error', reject)
    req.end()
  })
}

t.test('HTTPS: the certificate for the SNI name, the request proxied with https forwarding headers', async (t) => {
  const dir = tempDir(t, 'plinth-gateway-tls-')
  const first = await selfSigned(dir, 'first', ['secure.example'])
  const renewed = await selfSigned(dir, 'renewed', ['secure.example', 'other.example'])
  const { tlsPort, routes, certificates, served } = await startGateway(t, { tls: true })
  routes.set('secure.example', appRoute('secure', [await echoUpstream(t, 'i1')]))
  certificates.set('secure.example', first)
  const answer = await askTls(tlsPort as number, { servername: 'secure.example', headers: { host: 'secure.example', 'x-forwarded-proto': 'http' } }, [first.cert])
  t.equal(answer.status, 200)
  const seen = JSON.parse(answer.body)
  t.match(seen.headers, { 'x-forwarded-proto': 'https', 'x-forwarded-port': String(tlsPort), forwarded: 'for=127.0.0.1;host="secure.example";proto=https' })
  const again = await askTls(tlsPort as number, { servername: 'SECURE.example', headers: { host: 'secure.example' } }, [first.cert])
  t.equal(again.peerSerial, answer.peerSerial, 'the server name is matched without regard to case')
  // A renewal: the source now answers the new certificate, and the next handshake presents it.
  certificates.set('secure.example', renewed)
  const afterRenewal = await askTls(tlsPort as number, { servername: 'secure.example', headers: { host: 'secure.example' } }, [renewed.cert])
  t.not(afterRenewal.peerSerial, answer.peerSerial)
  t.match(await served.atLeast(3), [{ appId: 'secure', status: 200 }, { appId: 'secure' }, { appId: 'secure' }])
})

t.test('no certificate for the name, no name, or a broken certificate: the handshake fails, and others still work', async (t) => {
  const dir = tempDir(t, 'plinth-gateway-tls-')
  const good = await selfSigned(dir, 'good', ['secure.example'])
  const { tlsPort, routes, certificates } = await startGateway(t, { tls: true })
  routes.set('secure.example', appRoute('secure', [await echoUpstream(t, 'i1')]))
  certificates.set('secure.example', good)
  certificates.set('broken.example', { key: 'not a key', cert: 'not a certificate' })
  const port = tlsPort as number
  // A handshake failure alert (40), not a dropped connection.
  const handshakeFailure = { code: 'EPROTO', message: /alert handshake failure/ }
  await t.rejects(askTls(port, { servername: 'nobody.example', headers: { host: 'nobody.example' } }, [good.cert]), handshakeFailure, 'no certificate for the name')
  await t.rejects(askTls(port, { servername: '', headers: { host: 'secure.example' } }, [good.cert]), handshakeFailure, 'no server name at all')
  await t.rejects(askTls(port, { servername: 'broken.example', headers: { host: 'broken.example' } }, [good.cert]), handshakeFailure, 'a certificate that does not parse')
  t.equal((await askTls(port, { servername: 'secure.example', headers: { host: 'secure.example' } }, [good.cert])).status, 200)
})

t.test('ACME HTTP-01: key authorizations on the plain port for any host; 404 when there is none', async (t) => {
  const dir = tempDir(t, 'plinth-gateway-tls-')
  const good = await selfSigned(dir, 'good', ['secure.example'])
  const { port, tlsPort, routes, challenges, certificates, served } = await startGateway(t, { tls: true })
  routes.set('secure.example', appRoute('secure', [await echoUpstream(t, 'i1')]))
  certificates.set('secure.example', good)
  challenges.set('tok_EN-123', 'tok_EN-123.thumbprint')
  for (const host of ['secure.example', 'not-yet-routed.example']) {
    const answer = await ask(port, host, '/.well-known/acme-challenge/tok_EN-123')
    t.same([answer.status, answer.headers['content-type'], answer.body], [200, 'text/plain; charset=utf-8', 'tok_EN-123.thumbprint'], host)
  }
  const head = await ask(port, 'x.example', '/.well-known/acme-challenge/tok_EN-123', { method: 'HEAD' })
  t.same([head.status, head.headers['content-length'], head.body], [200, '21', ''])
  for (const [path, method] of [['/.well-known/acme-challenge/unknown', 'GET'], ['/.well-known/acme-challenge/tok_EN-123', 'POST'], ['/.well-known/acme-challenge/bad%20token', 'GET'], ['/.well-known/acme-challenge/', 'GET']]) {
    t.equal((await ask(port, 'secure.example', path, { method })).status, 404, `${method} ${path}`)
  }
  t.equal((await ask(port, 'secure.example', '/.well-known/acme-challenge/tok_EN-123?x=1')).body, 'tok_EN-123.thumbprint', 'a query does not change the token')
  const overTls = await askTls(tlsPort as number, { servername: 'secure.example', path: '/.well-known/acme-challenge/tok_EN-123', headers: { host: 'secure.example' } }, [good.cert])
  t.equal(JSON.parse(overTls.body).url, '/.well-known/acme-challenge/tok_EN-123', 'on the TLS port the path is the app\'s')
  t.same((await served.atLeast(1)).map((entry) => entry.appId), ['secure'], 'challenge answers are not counted as an app\'s')
})

t.test('plain HTTP to a host with a certificate: 308 to the same URL over HTTPS, ACME challenges excepted', async (t) => {
  const dir = tempDir(t, 'plinth-gateway-tls-')
  const good = await selfSigned(dir, 'good', ['secure.example'])
  const { port, tlsPort, routes, challenges, certificates, served } = await startGateway(t, { tls: true })
  routes.set('secure.example', appRoute('secure', [await echoUpstream(t, 'i1')]))
  routes.set('plain.example', appRoute('plain', [await echoUpstream(t, 'i2')]))
  routes.set('asleep.example', appRoute('asleep', [], { suspended: true }))
  certificates.set('secure.example', good)
  certificates.set('asleep.example', good)
  challenges.set('tok1', 'tok1.thumbprint')
  const moved = await ask(port, 'Secure.Example:80', '/shop/cart?item=1', { method: 'POST', body: 'x=1', headers: { 'content-type': 'text/plain' } })
  t.same([moved.status, moved.headers.location, moved.headers['cache-control'], moved.body], [308, `https://secure.example:${tlsPort as number}/shop/cart?item=1`, 'no-store', ''], 'method and body kept by a 308; the host as routed')
  t.match(moved.headers['x-request-id'], /\S/)
  t.equal((await ask(port, 'asleep.example', '/')).status, 308, 'a suspended app is redirected too, and answers 503 over HTTPS')
  t.equal((await ask(port, 'secure.example', '/.well-known/acme-challenge/tok1')).body, 'tok1.thumbprint', 'the CA still reaches its challenge over plain HTTP')
  t.equal((await ask(port, 'plain.example', '/')).status, 200, 'no certificate: served over plain HTTP')
  t.equal((await ask(port, 'nobody.example', '/')).status, 404)
  const upgrade = await raw(port, upgradeRequest('secure.example'))
  t.match(upgrade.received.toString(), /^HTTP\/1\.1 308 .*\r\nLocation: https:\/\/secure\.example:\d+\/socket\r\n/s, 'an Upgrade too')
  t.same((await served.atLeast(4)).map((entry) => [entry.appId, entry.status]).sort(), [['asleep', 308], ['plain', 200], ['secure', 308], ['secure', 308]], 'redirects are counted as the app\'s answers')
})

t.test('the redirect names the TLS port unless it is the default', async (t) => {
  t.same([httpsUrl('secure.example', 443, '/a?b=1'), httpsUrl('secure.example', 8443, '/')], ['https://secure.example/a?b=1', 'https://secure.example:8443/'])
})

t.test('no HTTPS listener: no redirect, whatever certificates exist', async (t) => {
  const dir = tempDir(t, 'plinth-gateway-tls-')
  const { port, routes, certificates } = await startGateway(t)
  routes.set('secure.example', appRoute('secure', [await echoUpstream(t, 'i1')]))
  certificates.set('secure.example', await selfSigned(dir, 'good', ['secure.example']))
  t.equal((await ask(port, 'secure.example', '/')).status, 200)
})

t.test('listen fails cleanly when a port is taken', async (t) => {
  const first = await startGateway(t)
  const { Gateway } = await import('../../../services/hosting/gateway/gateway.js')
  const second = new Gateway({ routes: { resolve: () => null }, served: { record: () => {} }, certificates: { certificateFor: () => null }, challenges: { keyAuthorization: () => null }, newId: () => 'id' })
  await t.rejects(second.listen({ port: first.port, host: '127.0.0.1' }), { code: 'EADDRINUSE' })
  t.same(second.addresses(), { http: null, https: null }, 'nothing is left listening')
})
