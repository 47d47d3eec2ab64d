import t from 'tap'
import { writeFileSync } from 'node:fs'
import { createServer as createTcpServer, type AddressInfo, type Socket } from 'node:net'
import { join } from 'node:path'
import { tempDir } from '../../helper.js'
import { appRoute, raw, startGateway, startUpstream, type TestUpstream } from './gateway-harness.js'

/**
 * An answer to HEAD has a head and nothing after it (RFC 9110 §9.3.2), or a
 * client reads the bytes as the start of its next answer: every kind of
 * answer the gateway gives, its own pages, node:http's refusals and an app's
 * answer that wrongly carries a body, read as raw bytes until the connection
 * closes.
 */

/** An app that answers anything, HEAD included, with a five-byte body. */
async function talkativeUpstream (t: Parameters<typeof startUpstream>[0]): Promise<TestUpstream> {
  const server = createTcpServer((socket: Socket) => {
    socket.on('error', () => {})
    socket.once('data', () => socket.end('HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello'))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as AddressInfo).port
  const close = async () => { await new Promise<void>((resolve) => server.close(() => resolve())) }
  t.teardown(close)
  return { server: server as never, port, instanceId: 'loud1', upstream: { instanceId: 'loud1', host: '127.0.0.1', port }, close }
}

t.test('no answer to HEAD carries a body, wherever in the gateway it comes from', async (t) => {
  const { port, routes, certificates, challenges } = await startGateway(t, { tls: true, upstreamTimeoutMs: 300, clientTimeouts: { headersMs: 1000, requestMs: 2000, checkEveryMs: 250 } })
  const site = tempDir(t, 'plinth-gateway-head-')
  writeFileSync(join(site, 'index.html'), '<!doctype html><p>home</p>\n')
  const silent = await startUpstream(t, 'silent1', () => {})
  routes.set('site.example', { kind: 'static', appId: 'site', projectId: 'proj1', suspended: false, deploymentId: 'dep1', root: site, spaFallback: false })
  routes.set('paused.example', appRoute('paused', [silent], { suspended: true }))
  routes.set('empty.example', appRoute('empty', []))
  routes.set('silent.example', appRoute('silent', [silent]))
  routes.set('loud.example', appRoute('loud', [await talkativeUpstream(t)]))
  routes.set('secure.example', appRoute('secure', [silent]))
  certificates.set('secure.example', { key: 'unused', cert: 'unused' })
  challenges.set('tok_1', 'tok_1.thumbprint')

  const head = (target: string, host: string, extra = '') => `HEAD ${target} HTTP/1.1\r\nHost: ${host}\r\n${extra}Connection: close\r\n\r\n`
  const cases: Array<[string, string | Buffer, number]> = [
    ['an unknown host', head('/', 'nobody.example'), 404],
    ['a target that is not a path', head('http://site.example/', 'site.example'), 400],
    ['two Host headers', head('/', 'site.example', 'Host: loud.example\r\n'), 400],
    ['a raw 0xFF byte in the path', Buffer.concat([Buffer.from('HEAD /a'), Buffer.from([0xff]), Buffer.from(' HTTP/1.1\r\nHost: site.example\r\n\r\n')]), 400],
    ['an obsolete folded header', head('/', 'site.example', 'X-A: 1\r\n folded\r\n'), 400],
    ['a suspended app', head('/', 'paused.example'), 503],
    ['an app without instances', head('/', 'empty.example'), 502],
    ['an app too slow to answer', head('/', 'silent.example'), 504],
    ['an app that sends a body with its answer to HEAD', head('/', 'loud.example'), 200],
    ['a static file', head('/', 'site.example'), 200],
    ['a static path with nothing there', head('/missing.txt', 'site.example'), 404],
    ['a static file not modified', head('/', 'site.example', 'If-Modified-Since: Fri, 01 Jan 2100 00:00:00 GMT\r\n'), 304],
    ['an ACME challenge', head('/.well-known/acme-challenge/tok_1', 'any.example'), 200],
    ['an unknown ACME token', head('/.well-known/acme-challenge/nope', 'any.example'), 404],
    ['a host with a certificate over plain HTTP', head('/', 'secure.example'), 308],
    ['an Upgrade to an unknown host', head('/', 'nobody.example', 'Upgrade: websocket\r\nConnection: Upgrade\r\n').replace('Connection: close\r\n', ''), 404],
    ['a head that never ends', 'HEAD / HTTP/1.1\r\nHost: site.example\r\nX-Slow: ', 408]
  ]
  for (const [name, request, status] of cases) {
    const { received } = await raw(port, request)
    const end = received.indexOf('\r\n\r\n')
    t.match(received.subarray(0, end).toString('latin1'), new RegExp(`^HTTP/1\\.1 ${status} `), `${name}: ${status}`)
    t.equal(received.length - (end + 4), 0, `${name}: no body`)
  }
})
