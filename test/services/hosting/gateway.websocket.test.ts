import t from 'tap'
import { join } from 'node:path'
import { acceptFor, appRoute, RawClient, readFrames, startGateway, startUpstream, upgradeRequest, webSocketUpstream, clientFrame, echoUpstream } from './gateway-harness.js'

/**
 * WebSocket (any Upgrade) through the gateway: a raw client over TCP sends
 * the Upgrade request and frames; a real upstream answers 101 and echoes.
 */

const FIXTURE = join(import.meta.dirname, '../../fixtures/hosting/static-site')
const frames = (text: string) => readFrames(Buffer.from(text.slice(text.indexOf('\r\n\r\n') + 4), 'latin1')).texts

t.test('an upgrade is proxied: the 101, the frames both ways, and forwarding headers from the connection', async (t) => {
  const { port, routes, served } = await startGateway(t)
  const upstream = await webSocketUpstream(t, 'ws1')
  routes.set('chat.example', appRoute('chat', [upstream]))
  const client = await RawClient.open(port)
  // The first frame goes in the same write as the head: the gateway must pass on bytes read past the head.
  client.socket.write(Buffer.concat([Buffer.from(upgradeRequest('chat.example', 'X-Forwarded-For: 6.6.6.6\r\nX-Request-Id: ws-trace-1\r\n')), clientFrame('early')]))
  const opened = await client.until((text) => frames(text).length >= 2)
  t.match(opened, /^HTTP\/1\.1 101 Switching Protocols\r\n/)
  t.match(opened, `Sec-WebSocket-Accept: ${acceptFor('dGhlIHNhbXBsZSBub25jZQ==')}\r\n`)
  t.match(opened, /\r\nUpgrade: websocket\r\n/)
  t.match(opened, /\r\nConnection: Upgrade\r\n/)
  t.match(opened, /\r\nX-Instance: ws1\r\n/)
  t.match(opened, /\r\nX-Request-Id: ws-trace-1\r\n/)
  t.same(frames(opened), ['welcome from ws1', 'echo:early'])
  client.socket.write(clientFrame('second'))
  t.same(frames(await client.until((text) => frames(text).length >= 3))[2], 'echo:second')
  t.match(upstream.seen[0], { 'x-forwarded-for': '127.0.0.1', 'x-real-ip': '127.0.0.1', 'x-forwarded-proto': 'http', upgrade: 'websocket', connection: 'Upgrade', 'x-request-id': 'ws-trace-1' })
  client.socket.end()
  await upstream.closed
  const [entry] = await served.atLeast(1)
  t.match(entry, { appId: 'chat', instanceId: 'ws1', status: 101 })
  t.equal(entry.bytesOut, frames(opened).concat('echo:second').reduce((sum, text) => sum + 2 + text.length, 0), 'egress counts the frames sent to the client')
})

t.test('an upgrade the upstream declines is answered as a plain response, and the connection closed', async (t) => {
  const { port, routes } = await startGateway(t)
  // A node:http server without an upgrade listener answers the request as any other.
  const plain = await echoUpstream(t, 'plain')
  const refusing = await startUpstream(t, 'refusing', (req, res) => {
    res.writeHead(426, { 'content-type': 'text/plain' })
    res.end('upgrade elsewhere')
  })
  routes.set('plain.example', appRoute('plain', [plain]))
  routes.set('refusing.example', appRoute('refusing', [refusing]))
  const one = await RawClient.open(port)
  one.socket.write(upgradeRequest('plain.example'))
  const answered = await one.until(() => one.closed)
  t.match(answered, /^HTTP\/1\.1 200 OK\r\n/)
  t.match(answered, /\r\nConnection: close\r\n/i)
  t.match(answered, /"instanceId":"plain"/)
  const two = await RawClient.open(port)
  two.socket.write(upgradeRequest('refusing.example'))
  t.match(await two.until(() => two.closed), /^HTTP\/1\.1 426 Upgrade Required\r\n[^]*\r\n\r\n11\r\nupgrade elsewhere\r\n0\r\n\r\n$/)
})

t.test('upgrades the gateway answers itself: unknown host, suspended, static, no upstream, timeout', async (t) => {
  const { port, routes, served } = await startGateway(t, { upstreamTimeoutMs: 200 })
  const silent = await startUpstream(t, 'silent', () => {})
  silent.server.on('upgrade', () => {})
  const ws = await webSocketUpstream(t, 'ws1')
  routes.set('paused.example', appRoute('paused', [ws], { suspended: true }))
  routes.set('site.example', { kind: 'static', appId: 'site', projectId: 'proj1', suspended: false, deploymentId: 'd1', root: FIXTURE, spaFallback: false })
  routes.set('empty.example', appRoute('empty', []))
  routes.set('silent.example', appRoute('silent', [silent]))
  const cases: Array<[string, RegExp]> = [
    ['nobody.example', /^HTTP\/1\.1 404 Not Found\r\n[^]*No app is served at nobody\.example/],
    ['paused.example', /^HTTP\/1\.1 503 Service Unavailable\r\n[^]*Retry-After: 60\r\n/],
    ['site.example', /^HTTP\/1\.1 200 OK\r\n[^]*static home/],
    ['empty.example', /^HTTP\/1\.1 502 Bad Gateway\r\n/],
    ['silent.example', /^HTTP\/1\.1 504 Gateway Timeout\r\n/]
  ]
  for (const [host, expected] of cases) {
    const client = await RawClient.open(port)
    client.socket.write(upgradeRequest(host, '', host === 'site.example' ? '/' : '/socket'))
    const text = await client.until(() => client.closed)
    t.match(text, expected, host)
    t.match(text, /\r\nConnection: close\r\n/, `${host}: the connection is not kept`)
  }
  t.same((await served.atLeast(4)).map((entry) => [entry.appId, entry.status]), [['paused', 503], ['site', 200], ['empty', 502], ['silent', 504]])
})

t.test('an upgrade retries past a refusing upstream; close() cuts open tunnels', async (t) => {
  const { port, routes, gateway } = await startGateway(t)
  const dead = await echoUpstream(t, 'dead')
  await dead.close()
  const ws = await webSocketUpstream(t, 'ws1')
  routes.set('chat.example', appRoute('chat', [dead, ws]))
  const client = await RawClient.open(port)
  client.socket.write(upgradeRequest('chat.example'))
  t.same(frames(await client.until((text) => frames(text).length >= 1)), ['welcome from ws1'])
  await gateway.close()
  await client.until(() => client.closed)
  await ws.closed
  t.pass('both ends of the tunnel were closed')
})

t.test('a client gone before the upstream answers leaves nothing open', async (t) => {
  const { port, routes } = await startGateway(t)
  let arrived!: () => void
  let upstreamClosed!: () => void
  const reached = new Promise<void>((resolve) => { arrived = resolve })
  const sawClose = new Promise<void>((resolve) => { upstreamClosed = resolve })
  const slow = await startUpstream(t, 'slow', () => {})
  slow.server.on('upgrade', (req, socket) => {
    // Node leaves an upgraded socket half-open: the gateway's end of it shows as 'end'.
    socket.on('end', upstreamClosed)
    arrived()
  })
  routes.set('chat.example', appRoute('chat', [slow]))
  const client = await RawClient.open(port)
  client.socket.write(upgradeRequest('chat.example'))
  await reached
  client.socket.destroy()
  await sawClose
  t.pass('the upstream connection was closed')
  // Bytes sent ahead of the 101 are held for the app, up to a bound.
  const flooding = await RawClient.open(port)
  flooding.socket.write(upgradeRequest('chat.example'))
  flooding.socket.write(Buffer.alloc(70_000))
  await flooding.until(() => flooding.closed)
  t.pass('a client sending too much before the switch is cut off')
})

t.test('either side closing closes the tunnel: the app ending it, a client resetting it', async (t) => {
  const { port, routes } = await startGateway(t)
  const ws = await webSocketUpstream(t, 'ws1')
  routes.set('chat.example', appRoute('chat', [ws]))
  const ending = await RawClient.open(port)
  ending.socket.write(upgradeRequest('chat.example'))
  await ending.until((text) => frames(text).length >= 1)
  ending.socket.write(clientFrame('bye'))
  await ending.until(() => ending.closed)
  t.pass('the app ended the connection and the client saw it closed')
  const ws2 = await webSocketUpstream(t, 'ws2')
  routes.set('chat.example', appRoute('chat', [ws2]))
  const resetting = await RawClient.open(port)
  resetting.socket.write(upgradeRequest('chat.example'))
  await resetting.until((text) => frames(text).length >= 1)
  resetting.socket.resetAndDestroy()
  await ws2.closed
  t.pass('a reset from the client closed the app side')
})
