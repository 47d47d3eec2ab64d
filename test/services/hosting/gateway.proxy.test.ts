import t from 'tap'
import { Agent, request } from 'node:http'
import { createServer as createTcpServer, type AddressInfo } from 'node:net'
import { routeHost } from '../../../services/hosting/gateway/host.js'
import { clientAddress, readRequestHead, requestIdFor } from '../../../services/hosting/gateway/forwarding.js'
import { appRoute, ask, echoUpstream, raw, startGateway, startUpstream, type Answer } from './gateway-harness.js'

/**
 * The gateway's reverse proxy against real upstreams (node:http servers on
 * loopback) and real clients: routing by Host, its own pages, the headers
 * it strips and sets, streaming, round-robin, retries and timeouts.
 */

const json = (answer: Answer) => JSON.parse(answer.body)
const count = (rawHeaders: string[], name: string) => rawHeaders.filter((value, i) => i % 2 === 0 && value.toLowerCase() === name).length

t.test('the routed host: lower case, no port, no trailing dot', async (t) => {
  const cases: Array<[string | undefined, string | null]> = [
    ['Example.COM', 'example.com'],
    ['example.com.:8080', 'example.com'],
    ['app.example.com:80', 'app.example.com'],
    ['[::1]:8080', '[::1]'],
    ['[::1', null],
    ['', null],
    [undefined, null],
    ['.', null]
  ]
  for (const [header, host] of cases) t.equal(routeHost(header), host, String(header))
})

t.test('request heads: ids, client addresses and the Connection header', async (t) => {
  const newId = () => 'generated'
  t.equal(requestIdFor('abc-123_x.y:z', newId), 'abc-123_x.y:z')
  t.equal(requestIdFor('has space', newId), 'generated')
  t.equal(requestIdFor('x'.repeat(129), newId), 'generated')
  t.equal(requestIdFor(undefined, newId), 'generated')
  t.equal(clientAddress({ remoteAddress: '::ffff:192.0.2.7' } as never), '192.0.2.7')
  t.equal(clientAddress({ remoteAddress: '2001:db8::1' } as never), '2001:db8::1')
  t.equal(clientAddress({ remoteAddress: undefined } as never), '')
  const head = readRequestHead(['Host', 'a', 'Connection', 'keep-alive, X-Hop', 'Connection', 'Upgrade', 'Upgrade', 'websocket', 'X-Hop', '1', 'X-Kept', '2', 'Content-Length', '0'])
  t.same(head.kept, ['Host', 'a', 'X-Kept', '2', 'Content-Length', '0'], 'headers the Connection header names are dropped')
  t.equal(head.upgrade, 'websocket')
  t.equal(head.hasBody, false)
  t.equal(readRequestHead(['Upgrade', 'websocket']).upgrade, undefined, 'an Upgrade without Connection: upgrade is no upgrade')
  t.equal(readRequestHead(['Transfer-Encoding', 'chunked']).hasBody, true)
})

t.test('unknown hosts get a 404 page, in HTML or JSON, and are not counted', async (t) => {
  const { port, served, routes } = await startGateway(t)
  const app = await echoUpstream(t, 'i1')
  routes.set('known.example', appRoute('app1', [app]))
  const html = await ask(port, 'nobody.example')
  t.equal(html.status, 404)
  t.match(html.headers['content-type'], /^text\/html/)
  t.match(html.body, /No app is served at nobody\.example\./)
  t.equal(html.headers['cache-control'], 'no-store')
  t.match(html.body, html.headers['x-request-id'] as string, 'the page names the request id')
  const escaped = await ask(port, 'a<b>.example')
  t.notMatch(escaped.body, /a<b>/, 'the host is escaped in the page')
  const asJson = await ask(port, 'nobody.example', '/', { headers: { accept: 'application/json' } })
  t.match(asJson.headers['content-type'], /^application\/json/)
  t.same(json(asJson), { success: false, code: 'APP_GATEWAY_UNKNOWN_HOST', message: 'No app is served at nobody.example.' })
  t.match(json(await ask(port, 'nobody.example', '/', { headers: { accept: 'application/json, text/html' } })), { code: 'APP_GATEWAY_UNKNOWN_HOST' })
  t.match((await ask(port, 'nobody.example', '/', { headers: { accept: 'text/html, application/json' } })).body, /^<!doctype html>/)
  const head = await ask(port, 'nobody.example', '/', { method: 'HEAD' })
  t.same([head.status, head.body], [404, ''])
  const noHost = await raw(port, 'GET / HTTP/1.0\r\n\r\n')
  t.match(noHost.received.toString(), /^HTTP\/1\.1 404[^]*The request names no host\./)
  t.equal((await ask(port, 'Known.Example.:1234')).status, 200, 'the host is normalized before lookup')
  t.same((await served.atLeast(1)).map((entry) => entry.appId), ['app1'], 'only the known app is counted')
})

t.test('suspended apps get 503 with Retry-After; apps without upstreams, or all refusing, get 502', async (t) => {
  const { port, served, routes } = await startGateway(t)
  const app = await echoUpstream(t, 'i1')
  routes.set('paused.example', appRoute('paused', [app], { suspended: true }))
  routes.set('empty.example', appRoute('empty', []))
  const dead1 = await echoUpstream(t, 'dead1')
  const dead2 = await echoUpstream(t, 'dead2')
  await dead1.close()
  await dead2.close()
  routes.set('down.example', appRoute('down', [dead1, dead2]))
  const paused = await ask(port, 'paused.example')
  t.same([paused.status, paused.headers['retry-after']], [503, '60'])
  t.match(paused.body, /suspended/)
  const empty = await ask(port, 'empty.example', '/', { headers: { accept: 'application/json' } })
  t.same([empty.status, json(empty).code], [502, 'APP_GATEWAY_NO_UPSTREAM'])
  const down = await ask(port, 'down.example')
  t.equal(down.status, 502)
  const post = await ask(port, 'down.example', '/', { method: 'POST', body: 'x' })
  t.equal(post.status, 502)
  const entries = await served.atLeast(4)
  t.match(entries, [
    { appId: 'paused', instanceId: null, status: 503 },
    { appId: 'empty', instanceId: null, status: 502 },
    { appId: 'down', status: 502 },
    { appId: 'down', status: 502 }
  ])
  t.ok(entries.every((entry) => entry.bytesOut > 0 && entry.durationMs >= 0), 'pages are counted as served bytes')
})

t.test('a request target that is not a path is refused', async (t) => {
  const { port, routes } = await startGateway(t)
  routes.set('app.example', appRoute('app1', [await echoUpstream(t, 'i1')]))
  const { received } = await raw(port, 'GET http://app.example/ HTTP/1.1\r\nHost: app.example\r\nConnection: close\r\n\r\n')
  t.match(received.toString(), /^HTTP\/1\.1 400 [^]*The request target must be a path\./)
})

t.test('more than one Host is refused (RFC 9112 §3.2), whichever names an app, and the connection closed', async (t) => {
  const { port, routes, served } = await startGateway(t)
  const a = await echoUpstream(t, 'a1')
  const b = await echoUpstream(t, 'b1')
  let reached = 0
  for (const upstream of [a, b]) upstream.server.on('request', () => { reached++ })
  routes.set('a.example', appRoute('appA', [a]))
  routes.set('b.example', appRoute('appB', [b]))
  const shapes: Array<[string, string]> = [
    ['two Host lines', 'Host: a.example\r\nHost: b.example\r\n'],
    ['the same host twice', 'Host: a.example\r\nHost: a.example\r\n'],
    ['names in other cases', 'host: b.example\r\nHOST: a.example\r\n'],
    ['one empty', 'Host: a.example\r\nHost: \r\n'],
    ['apart, with headers between', 'Host: a.example\r\nX-Other: 1\r\nAccept: application/json\r\nHost: b.example\r\n']
  ]
  for (const [name, hosts] of shapes) {
    const { received } = await raw(port, `GET / HTTP/1.1\r\n${hosts}Accept: application/json\r\n\r\n`)
    const text = received.toString()
    t.match(text, /^HTTP\/1\.1 400 /, name)
    t.match(text, /\r\nConnection: close\r\n/i, `${name}: the connection is closed after it`)
    t.same(JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)), { success: false, code: 'APP_GATEWAY_BAD_REQUEST', message: 'The request has more than one Host header.' }, `${name}: the gateway's page`)
  }
  t.equal(reached, 0, 'no app saw any of them')
  t.same([(await ask(port, 'b.example')).status, reached], [200, 1], 'one Host is routed as ever')
  t.same((await served.atLeast(1)).map((entry) => entry.appId), ['appB'], 'refusals are not counted as an app\'s')
})

t.test('forwarding headers come from the connection; spoofed ones are stripped', async (t) => {
  const { port, routes } = await startGateway(t)
  routes.set('app.example', appRoute('app1', [await echoUpstream(t, 'i1')]))
  const answer = await ask(port, 'App.Example', '/path?q=1', {
    headers: {
      'x-forwarded-for': '6.6.6.6',
      'X-Forwarded-Proto': 'https',
      'x-forwarded-host': 'evil.example',
      'x-forwarded-port': '1',
      'x-real-ip': '6.6.6.6',
      forwarded: 'for=6.6.6.6;proto=https',
      'user-agent': 'gateway-test'
    }
  })
  t.equal(answer.status, 200)
  const seen = json(answer)
  t.equal(seen.url, '/path?q=1')
  t.match(seen.headers, {
    host: 'App.Example',
    'x-forwarded-for': '127.0.0.1',
    'x-forwarded-proto': 'http',
    'x-forwarded-host': 'App.Example',
    'x-forwarded-port': String(port),
    'x-real-ip': '127.0.0.1',
    forwarded: 'for=127.0.0.1;host="App.Example";proto=http',
    'user-agent': 'gateway-test'
  })
  for (const name of ['x-forwarded-for', 'x-forwarded-proto', 'x-forwarded-host', 'x-real-ip', 'forwarded']) t.equal(count(seen.rawHeaders, name), 1, `one ${name}`)
})

t.test('hop-by-hop headers are dropped both ways', async (t) => {
  const { port, routes } = await startGateway(t)
  const upstream = await startUpstream(t, 'i1', (req, res) => {
    res.setHeader('Connection', 'keep-alive, X-Upstream-Hop')
    res.setHeader('X-Upstream-Hop', 'secret')
    res.setHeader('Proxy-Authenticate', 'Basic')
    res.setHeader('Trailer', 'X-Checksum')
    res.setHeader('Set-Cookie', ['a=1', 'b=2'])
    res.end(JSON.stringify(req.headers))
  })
  routes.set('app.example', appRoute('app1', [upstream]))
  const answer = await ask(port, 'app.example', '/', { headers: { connection: 'keep-alive, X-Client-Hop', 'x-client-hop': '1', te: 'trailers', 'proxy-authorization': 'Basic eA==', 'keep-alive': 'timeout=9', 'x-kept': 'yes' } })
  const seen = json(answer)
  t.equal(seen['x-kept'], 'yes')
  for (const name of ['x-client-hop', 'te', 'proxy-authorization']) t.notOk(name in seen, `${name} stays with the client`)
  t.not(seen['keep-alive'], 'timeout=9')
  for (const name of ['x-upstream-hop', 'proxy-authenticate', 'trailer']) t.notOk(name in answer.headers, `${name} stays with the upstream`)
  t.same(answer.headers['set-cookie'], ['a=1', 'b=2'], 'repeated headers pass as they are')
})

t.test('X-Request-Id: kept when it is a plain token, else replaced; the same on both sides', async (t) => {
  const { port, routes, served } = await startGateway(t)
  const upstream = await startUpstream(t, 'i1', (req, res) => {
    res.setHeader('x-request-id', 'upstream-own')
    res.end(req.headers['x-request-id'])
  })
  routes.set('app.example', appRoute('app1', [upstream]))
  const kept = await ask(port, 'app.example', '/', { headers: { 'x-request-id': 'client-trace-42' } })
  t.same([kept.body, kept.headers['x-request-id']], ['client-trace-42', 'client-trace-42'])
  const replaced = await ask(port, 'app.example', '/', { headers: { 'x-request-id': 'not a <token>' } })
  t.match(replaced.body, /^[0-9a-z]{20}$/)
  t.equal(replaced.headers['x-request-id'], replaced.body)
  const fresh = await ask(port, 'app.example')
  t.match(fresh.body, /^[0-9a-z]{20}$/)
  t.not(fresh.body, replaced.body)
  t.equal(count(fresh.rawHeaders, 'x-request-id'), 1)
  const entries = await served.atLeast(3)
  t.match(entries[0], { appId: 'app1', instanceId: 'i1', status: 200, bytesOut: 'client-trace-42'.length })
})

t.test('bodies stream both ways without being held', async (t) => {
  const { port, routes } = await startGateway(t)
  // The upstream answers its first part before the client has sent the end of its body: a buffering proxy would deadlock.
  const upstream = await startUpstream(t, 'i1', (req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' })
    res.write('first;')
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => res.end(`got ${Buffer.concat(chunks).toString()}`))
  })
  routes.set('app.example', appRoute('app1', [upstream]))
  const body = await new Promise<string>((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method: 'POST', path: '/', headers: { host: 'app.example', 'transfer-encoding': 'chunked' }, agent: false }, (res) => {
      let text = ''
      res.on('data', (chunk: Buffer) => {
        text += chunk.toString()
        if (text === 'first;') req.end('world')
      })
      res.on('end', () => resolve(text))
    })
    req.on('error', reject)
    req.write('hello ')
  })
  t.equal(body, 'first;got hello world')
})

t.test('HEAD, status texts and empty answers pass through', async (t) => {
  const { port, routes } = await startGateway(t)
  const upstream = await startUpstream(t, 'i1', (req, res) => {
    if (req.url === '/teapot') {
      res.writeHead(418, 'Short And Stout', { 'content-length': '3' })
      res.end('tea')
      return
    }
    if (req.url === '/none') {
      res.writeHead(204)
      res.end()
      return
    }
    res.writeHead(200, { 'content-length': '5', 'content-type': 'text/plain' })
    res.end('hello')
  })
  routes.set('app.example', appRoute('app1', [upstream]))
  const head = await ask(port, 'app.example', '/', { method: 'HEAD' })
  t.same([head.status, head.headers['content-length'], head.body], [200, '5', ''])
  const { received } = await raw(port, 'GET /teapot HTTP/1.1\r\nHost: app.example\r\nConnection: close\r\n\r\n')
  t.match(received.toString(), /^HTTP\/1\.1 418 Short And Stout\r\n/)
  t.equal((await ask(port, 'app.example', '/none')).status, 204)
})

t.test('an upstream head the gateway cannot repeat is a 502; a status without a reason gets the standard one', async (t) => {
  const { port, routes } = await startGateway(t)
  // A status under 100 is no HTTP answer; a status line without its reason phrase is one.
  const heads: Record<string, string> = { 'odd.example': 'HTTP/1.1 099 Low', 'bare.example': 'HTTP/1.1 200' }
  for (const [host, head] of Object.entries(heads)) {
    const server = createTcpServer((socket) => socket.once('data', () => socket.end(`${head}\r\nContent-Length: 2\r\n\r\nhi`)))
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    t.teardown(() => server.close())
    routes.set(host, { kind: 'app', appId: host, projectId: 'proj1', suspended: false, upstreams: [{ instanceId: 'raw', host: '127.0.0.1', port: (server.address() as AddressInfo).port }] })
  }
  t.equal((await ask(port, 'odd.example')).status, 502)
  const { received } = await raw(port, 'GET / HTTP/1.1\r\nHost: bare.example\r\nConnection: close\r\n\r\n')
  t.match(received.toString(), /^HTTP\/1\.1 200 OK\r\n[^]*hi$/)
})

t.test('round-robin over the upstreams', async (t) => {
  const { port, routes, served } = await startGateway(t)
  const apps = [await echoUpstream(t, 'a'), await echoUpstream(t, 'b'), await echoUpstream(t, 'c')]
  routes.set('app.example', appRoute('app1', apps))
  routes.set('other.example', appRoute('app2', apps))
  const order: string[] = []
  for (let i = 0; i < 6; i++) {
    order.push(json(await ask(port, 'app.example')).instanceId)
    await ask(port, 'other.example')
  }
  t.same(order, ['a', 'b', 'c', 'a', 'b', 'c'], 'each app keeps its own turn')
  t.same((await served.atLeast(12)).filter((entry) => entry.appId === 'app1').map((entry) => entry.instanceId), order)
})

t.test('a refused connection is retried on the next upstream for idempotent requests only', async (t) => {
  const { port, routes, served } = await startGateway(t)
  const dead = await echoUpstream(t, 'dead')
  const live = await echoUpstream(t, 'live')
  await dead.close()
  routes.set('app.example', appRoute('app1', [dead, live]))
  // The app's first turn goes to `dead`: a POST there is not sent again, since its body went to the failed attempt.
  t.equal((await ask(port, 'app.example', '/', { method: 'POST', body: 'once' })).status, 502)
  for (let i = 0; i < 6; i++) {
    const answer = await ask(port, 'app.example', `/${i}`, { method: i % 2 === 0 ? 'GET' : 'DELETE' })
    t.same([answer.status, json(answer).instanceId], [200, 'live'], `request ${i}`)
  }
  const entries = await served.atLeast(7)
  t.same(entries.slice(1).map((entry) => entry.instanceId), Array(6).fill('live'), 'the record names the instance that answered')
})

t.test('a retry reads the table again: an app suspended or moved meanwhile is not retried', async (t) => {
  const { port, routes } = await startGateway(t)
  const dead = await echoUpstream(t, 'dead')
  const live = await echoUpstream(t, 'live')
  await dead.close()
  const later: Array<ReturnType<typeof appRoute> | null> = [
    appRoute('app1', [live], { suspended: true }),
    { kind: 'static', appId: 'app1', projectId: 'proj1', suspended: false, deploymentId: 'd1', root: '/nonexistent', spaFallback: false },
    appRoute('another', [live]),
    null,
    appRoute('app1', [dead])
  ]
  for (const route of later) {
    let reads = 0
    routes.resolve = () => ++reads === 1 ? appRoute('app1', [dead]) : route
    t.equal((await ask(port, 'app.example')).status, 502, JSON.stringify(route))
    t.equal(reads, 2, 'read once to route, once to retry')
  }
})

t.test('a redeploy that swaps upstreams under a request loop shows no 5xx', async (t) => {
  const { port, routes } = await startGateway(t)
  const old = await echoUpstream(t, 'old')
  const next = await echoUpstream(t, 'next')
  routes.set('app.example', appRoute('app1', [old]))
  // Clients that keep connections open, like browsers, four requests at a time.
  const agent = new Agent({ keepAlive: true })
  t.teardown(() => agent.destroy())
  const statuses: number[] = []
  const answeredBy: string[] = []
  let swapped = false
  const loop = async () => {
    for (let i = 0; i < 60; i++) {
      const answer = await new Promise<Answer>((resolve, reject) => {
        const req = request({ host: '127.0.0.1', port, path: '/', headers: { host: 'app.example' }, agent }, (res) => {
          const chunks: Buffer[] = []
          res.on('data', (chunk: Buffer) => chunks.push(chunk))
          res.on('end', () => resolve({ status: res.statusCode as number, headers: res.headers, rawHeaders: res.rawHeaders, body: Buffer.concat(chunks).toString() }))
        })
        req.on('error', reject)
        req.end()
      })
      statuses.push(answer.status)
      answeredBy.push(answer.status === 200 ? json(answer).instanceId : '')
      if (!swapped && statuses.length >= 80) {
        swapped = true
        // The orchestration's order: the new instance goes live in the table, then the old one is stopped.
        routes.set('app.example', appRoute('app1', [next]))
        await old.close()
      }
    }
  }
  await Promise.all([loop(), loop(), loop(), loop()])
  t.equal(statuses.length, 240)
  t.same(statuses.filter((status) => status !== 200), [], 'every request answered 200')
  t.ok(answeredBy.includes('old') && answeredBy.includes('next'), 'both deployments answered')
  t.equal(answeredBy.slice(-100).filter((id) => id === 'old').length, 0, 'after the swap only the new one answers')
})

t.test('an upstream killed while listed: idempotent requests move to the others', async (t) => {
  const { port, routes } = await startGateway(t)
  const a = await echoUpstream(t, 'a')
  const b = await echoUpstream(t, 'b')
  routes.set('app.example', appRoute('app1', [a, b]))
  // Warm the gateway's kept-alive connections to both, then cut them.
  for (let i = 0; i < 4; i++) await ask(port, 'app.example')
  await a.close()
  const answers = await Promise.all(Array.from({ length: 10 }, async () => await ask(port, 'app.example')))
  t.same(answers.map((answer) => [answer.status, json(answer).instanceId]), Array(10).fill([200, 'b']))
})

t.test('a silent upstream gets 504; one that dies or stalls mid-answer cuts the client off', async (t) => {
  const { port, routes, served } = await startGateway(t, { upstreamTimeoutMs: 200 })
  const silent = await startUpstream(t, 'silent', () => {})
  const dying = await startUpstream(t, 'dying', (req, res) => {
    res.writeHead(200, { 'content-length': '100' })
    res.write('partial')
    setImmediate(() => req.socket.destroy())
  })
  const stalling = await startUpstream(t, 'stalling', (req, res) => {
    res.writeHead(200, { 'content-length': '100' })
    res.write('partial')
  })
  routes.set('silent.example', appRoute('silent', [silent]))
  routes.set('dying.example', appRoute('dying', [dying]))
  routes.set('stalling.example', appRoute('stalling', [stalling]))
  const timedOut = await ask(port, 'silent.example', '/', { headers: { accept: 'application/json' } })
  t.same([timedOut.status, json(timedOut).code], [504, 'APP_GATEWAY_UPSTREAM_TIMEOUT'])
  await t.rejects(ask(port, 'dying.example'), 'the client sees the answer cut, not a complete one')
  await t.rejects(ask(port, 'stalling.example'), 'an answer that stalls past the timeout is cut too')
  const entries = await served.atLeast(3)
  t.match(entries, [{ appId: 'silent', status: 504 }, { appId: 'dying', status: 200, bytesOut: 7 }, { appId: 'stalling', status: 200, bytesOut: 7 }])
})

t.test('a client that goes away cancels its upstream request', async (t) => {
  const { port, routes, served } = await startGateway(t)
  let arrived!: () => void
  let upstreamClosed!: () => void
  const reached = new Promise<void>((resolve) => { arrived = resolve })
  const sawClose = new Promise<void>((resolve) => { upstreamClosed = resolve })
  const upstream = await startUpstream(t, 'i1', (req, res) => {
    res.on('close', upstreamClosed)
    arrived()
  })
  routes.set('app.example', appRoute('app1', [upstream]))
  const req = request({ host: '127.0.0.1', port, path: '/', headers: { host: 'app.example' }, agent: false })
  req.on('error', () => {})
  req.end()
  await reached
  req.destroy()
  await sawClose
  t.pass('the upstream saw its request closed')
  t.match((await served.atLeast(1))[0], { appId: 'app1', instanceId: 'i1' })
})

t.test('close() lets a request in flight finish, then stops', async (t) => {
  const { port, routes, gateway } = await startGateway(t)
  let release!: () => void
  let arrived!: () => void
  const held = new Promise<void>((resolve) => { release = resolve })
  const reached = new Promise<void>((resolve) => { arrived = resolve })
  const upstream = await startUpstream(t, 'i1', (req, res) => {
    arrived()
    void held.then(() => res.end('done'))
  })
  routes.set('app.example', appRoute('app1', [upstream]))
  const agent = new Agent({ keepAlive: true })
  t.teardown(() => agent.destroy())
  const answer = new Promise<string>((resolve, reject) => {
    request({ host: '127.0.0.1', port, path: '/', headers: { host: 'app.example' }, agent }, (res) => {
      let text = ''
      res.on('data', (chunk: Buffer) => { text += chunk.toString() })
      res.on('end', () => resolve(text))
    }).on('error', reject).end()
  })
  await reached
  const closed = gateway.close()
  release()
  t.equal(await answer, 'done')
  await closed
  await t.rejects(ask(port, 'app.example'), { code: 'ECONNREFUSED' })
})
