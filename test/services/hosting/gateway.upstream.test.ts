import t, { type Test } from 'tap'
import { request } from 'node:http'
import { createServer as createTcpServer, type AddressInfo, type Socket } from 'node:net'
import { appRoute, ask, echoUpstream, startGateway, startUpstream, type Harness } from './gateway-harness.js'

/**
 * The gateway's connections to upstreams against real sockets: upstreams
 * that write exact bytes (framings, cut answers, protocol errors) and
 * node:http apps, seen from real clients; which connections are kept,
 * reused or dropped is counted on the upstream's side.
 */

interface RawUpstream { port: number, connections: number, heads: string[], upstream: () => { instanceId: string, host: string, port: number }, route: (appId: string) => ReturnType<typeof appRoute> }

/** An upstream on a plain TCP server: `answer` gets each request head (body bytes after it are ignored) and writes what it likes. */
async function rawUpstream (t: Test, answer: (socket: Socket, head: string, index: number) => void): Promise<RawUpstream> {
  const sockets = new Set<Socket>()
  const state: RawUpstream = {
    port: 0,
    connections: 0,
    heads: [],
    upstream: () => ({ instanceId: `raw-${state.port}`, host: '127.0.0.1', port: state.port }),
    route: (appId) => ({ kind: 'app', appId, projectId: 'proj1', suspended: false, upstreams: [state.upstream()] })
  }
  const server = createTcpServer((socket) => {
    state.connections++
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
    socket.on('error', () => {})
    let buffer = ''
    socket.on('data', (chunk: Buffer) => {
      buffer += chunk.toString('latin1')
      for (let end = buffer.indexOf('\r\n\r\n'); end !== -1; end = buffer.indexOf('\r\n\r\n')) {
        const head = buffer.slice(0, end)
        buffer = ''
        state.heads.push(head)
        answer(socket, head, state.heads.length - 1)
      }
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  state.port = (server.address() as AddressInfo).port
  t.teardown(async () => {
    for (const socket of sockets) socket.destroy()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  })
  return state
}

async function routed (t: Test, answer: (socket: Socket, head: string, index: number) => void): Promise<{ gateway: Harness, upstream: RawUpstream }> {
  const gateway = await startGateway(t, { upstreamTimeoutMs: 1000 })
  const upstream = await rawUpstream(t, answer)
  gateway.routes.set('app.example', upstream.route('app1'))
  return { gateway, upstream }
}

const tick = async (ms = 10) => await new Promise((resolve) => setTimeout(resolve, ms))

t.test('a chunked answer: streamed as it comes, or given its length when it came whole', async (t) => {
  const { gateway, upstream } = await routed(t, (socket, head) => {
    if (head.startsWith('GET /whole')) {
      socket.write('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n')
      return
    }
    socket.write('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n')
    setTimeout(() => socket.write('6\r\n world\r\n0\r\nX-Trailer: 1\r\n\r\n'), 20)
  })
  const whole = await ask(gateway.port, 'app.example', '/whole')
  t.same([whole.status, whole.body, whole.headers['content-length'], whole.headers['transfer-encoding']], [200, 'hello world', '11', undefined])
  const streamed = await ask(gateway.port, 'app.example', '/streamed')
  t.same([streamed.status, streamed.body, streamed.headers['transfer-encoding'], streamed.headers['x-trailer']], [200, 'hello world', 'chunked', undefined])
  t.equal(upstream.connections, 1, 'both on one kept-alive connection')
  const entries = await gateway.served.atLeast(2)
  t.same(entries.map((entry) => entry.bytesOut), [11, 11])
})

t.test('an answer without a length runs until the upstream closes, and its connection is not reused', async (t) => {
  const { gateway, upstream } = await routed(t, (socket) => {
    socket.write('HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil ')
    setTimeout(() => socket.end('the end'), 20)
  })
  for (let i = 0; i < 2; i++) t.equal((await ask(gateway.port, 'app.example')).body, 'until the end')
  t.equal(upstream.connections, 2)
})

t.test('kept-alive connections: reused, dropped on Connection: close, on a short Keep-Alive hint, on stray bytes', async (t) => {
  const { gateway, upstream } = await routed(t, (socket, head) => {
    const path = head.split(' ')[1]
    const extra = path === '/close' ? 'Connection: close\r\n' : path === '/short' ? 'Keep-Alive: timeout=1\r\n' : path === '/hint' ? 'Keep-Alive: timeout=2\r\n' : ''
    socket.write(`HTTP/1.1 200 OK\r\n${extra}Content-Length: 2\r\n\r\nok${path === '/stray' ? 'stray bytes' : ''}`)
  })
  const expected: Array<[string, number]> = [['/a', 1], ['/b', 1], ['/close', 1], ['/c', 2], ['/short', 2], ['/d', 3], ['/stray', 3], ['/e', 4]]
  for (const [path, connections] of expected) {
    const answer = await ask(gateway.port, 'app.example', path)
    t.same([answer.status, answer.body], [200, 'ok'], path)
    await tick()
    t.equal(upstream.connections, connections, `${path}: ${connections} connection(s) so far`)
  }
  // A hint of 2 s: the connection is offered for 1 s, then left to close.
  await ask(gateway.port, 'app.example', '/hint')
  await ask(gateway.port, 'app.example', '/f')
  t.equal(upstream.connections, 4, 'reused within its idle time')
  await tick(1100)
  await ask(gateway.port, 'app.example', '/g')
  t.equal(upstream.connections, 5, 'not past it')
})

t.test('HEAD, 204 and 304 answers end at their head; the connection carries on unless the answer named a body', async (t) => {
  const { gateway, upstream } = await routed(t, (socket, head) => {
    if (head.startsWith('HEAD')) {
      // The GET's length, and (as some servers do) the body after all, in a later write.
      socket.write('HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n')
      setTimeout(() => socket.write('HTTP/'), 5)
    } else if (head.startsWith('GET /none')) socket.write('HTTP/1.1 204 No Content\r\n\r\n')
    else socket.write('HTTP/1.1 304 Not Modified\r\nETag: "x"\r\n\r\n')
  })
  const head = await ask(gateway.port, 'app.example', '/', { method: 'HEAD' })
  t.same([head.status, head.headers['content-length'], head.body], [200, '5', ''])
  t.equal((await ask(gateway.port, 'app.example', '/none')).status, 204, 'the next request is not answered by the late bytes')
  const notModified = await ask(gateway.port, 'app.example', '/cached')
  t.same([notModified.status, notModified.headers.etag], [304, '"x"'])
  t.equal(upstream.connections, 2, 'the HEAD answer\'s connection was dropped; the 204 and the 304 shared the next')
})

t.test('informational answers stay with the gateway', async (t) => {
  const { gateway } = await routed(t, (socket) => {
    socket.write('HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n')
    setTimeout(() => socket.write('HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfinal'), 10)
  })
  const answer = await ask(gateway.port, 'app.example')
  t.same([answer.status, answer.body, answer.headers.link], [200, 'final', undefined])
})

t.test('an answer the gateway cannot trust is a 502 and its connection is dropped', async (t) => {
  const answers: Record<string, string> = {
    '/both': 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\n',
    '/gzip': 'HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nxx',
    '/fold': 'HTTP/1.1 200 OK\r\nX-A: 1\r\n folded\r\nContent-Length: 0\r\n\r\n',
    '/big': `HTTP/1.1 200 OK\r\nX-Big: ${'x'.repeat(20_000)}\r\nContent-Length: 0\r\n\r\n`,
    '/upgrade': 'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n'
  }
  const { gateway, upstream } = await routed(t, (socket, head) => socket.write(answers[head.split(' ')[1]]))
  let connections = 0
  for (const path of Object.keys(answers)) {
    const answer = await ask(gateway.port, 'app.example', path, { headers: { accept: 'application/json' } })
    t.same([answer.status, JSON.parse(answer.body).code], [502, 'APP_GATEWAY_NO_UPSTREAM'], path)
    t.equal(upstream.heads.length, ++connections, `${path} was asked once, not retried`)
    await tick()
    t.equal(upstream.connections, connections, `${path}: the connection was not reused`)
  }
})

t.test('an upstream that closes mid-answer cuts the client off; one that closes unanswered is retried elsewhere', async (t) => {
  const gateway = await startGateway(t, { upstreamTimeoutMs: 1000 })
  const cutting = await rawUpstream(t, (socket, head) => {
    if (head.startsWith('GET /head')) socket.end('HTTP/1.1 200 OK\r\nContent-Le')
    else if (head.startsWith('GET /reset')) {
      socket.write('HTTP/1.1 200 OK\r\n')
      setTimeout(() => socket.resetAndDestroy(), 10)
    } else socket.end('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel')
  })
  gateway.routes.set('cutting.example', cutting.route('cutting'))
  await t.rejects(ask(gateway.port, 'cutting.example', '/chunked'), 'a chunked answer cut mid-chunk')
  t.equal((await ask(gateway.port, 'cutting.example', '/head')).status, 502, 'a head cut short')
  t.equal((await ask(gateway.port, 'cutting.example', '/reset')).status, 502, 'a head cut by a reset')
  t.equal(cutting.heads.length, 3, 'neither was asked again')
  const hangingUp = await rawUpstream(t, (socket) => socket.end())
  const resetting = await rawUpstream(t, (socket) => socket.resetAndDestroy())
  const live = await echoUpstream(t, 'live')
  gateway.routes.set('app.example', { kind: 'app', appId: 'app1', projectId: 'proj1', suspended: false, upstreams: [hangingUp.upstream(), resetting.upstream(), live.upstream] })
  for (let i = 0; i < 3; i++) {
    const answer = await ask(gateway.port, 'app.example')
    t.same([answer.status, JSON.parse(answer.body).instanceId], [200, 'live'], `turn ${i}`)
  }
  // The other app's first turn goes to the upstream that hangs up.
  gateway.routes.set('post.example', { kind: 'app', appId: 'app2', projectId: 'proj1', suspended: false, upstreams: [hangingUp.upstream(), live.upstream] })
  t.equal((await ask(gateway.port, 'post.example', '/', { method: 'POST', body: 'once' })).status, 502, 'a POST is not sent again')
})

t.test('a kept-alive connection closed as it is reused: an idempotent request goes again on a new one, others get 502', async (t) => {
  // Each connection answers its first request, and closes unanswered on the next, as an app's idle timeout would.
  const served = new WeakSet<Socket>()
  const { gateway, upstream } = await routed(t, (socket) => {
    if (served.has(socket)) {
      socket.end()
      return
    }
    served.add(socket)
    socket.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok')
  })
  t.equal((await ask(gateway.port, 'app.example')).status, 200)
  const again = await ask(gateway.port, 'app.example', '/again')
  t.same([again.status, again.body, upstream.connections], [200, 'ok', 2], 'sent again on a second connection')
  t.equal((await ask(gateway.port, 'app.example', '/post', { method: 'POST' })).status, 502, 'a POST is not sent twice')
  t.equal((await ask(gateway.port, 'app.example')).status, 200)
  t.equal((await ask(gateway.port, 'app.example', '/put', { method: 'PUT', body: 'data' })).status, 502, 'nor a request with a body')
  t.equal(upstream.connections, 3)
})

t.test('a kept-alive connection the upstream closed while idle is not used again', async (t) => {
  const gateway = await startGateway(t)
  const app = await echoUpstream(t, 'i1')
  gateway.routes.set('app.example', appRoute('app1', [app]))
  const connections: Socket[] = []
  app.server.on('connection', (socket: Socket) => connections.push(socket))
  t.equal((await ask(gateway.port, 'app.example')).status, 200)
  app.server.closeIdleConnections()
  await tick(20)
  t.equal((await ask(gateway.port, 'app.example')).status, 200)
  t.equal(connections.length, 2)
  // Bytes from an upstream between requests are no answer to anything: that connection goes too.
  connections[1].write('HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n')
  await tick(20)
  t.ok(connections[1].destroyed || connections[1].readableEnded, 'the gateway closed it')
  t.equal((await ask(gateway.port, 'app.example')).status, 200)
  t.equal(connections.length, 3)
})

t.test('request bodies: by length and in chunks, large ones with back-pressure', async (t) => {
  const gateway = await startGateway(t)
  const counting = await startUpstream(t, 'i1', (req, res) => {
    let bytes = 0
    req.on('data', (chunk: Buffer) => { bytes += chunk.length })
    req.on('end', () => res.end(JSON.stringify({ bytes, length: req.headers['content-length'] ?? null, encoding: req.headers['transfer-encoding'] ?? null })))
  })
  gateway.routes.set('app.example', appRoute('app1', [counting]))
  const big = Buffer.alloc(8 * 1024 * 1024, 'a')
  t.same(JSON.parse((await ask(gateway.port, 'app.example', '/', { method: 'POST', body: big })).body), { bytes: big.length, length: String(big.length), encoding: null })
  const chunked = await new Promise<string>((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: gateway.port, method: 'PUT', path: '/', headers: { host: 'app.example', 'transfer-encoding': 'chunked' }, agent: false }, (res) => {
      let text = ''
      res.on('data', (chunk: Buffer) => { text += chunk.toString() })
      res.on('end', () => resolve(text))
    })
    req.on('error', reject)
    req.write(big.subarray(0, 1000))
    req.write(Buffer.alloc(0))
    req.end(big.subarray(1000))
  })
  t.same(JSON.parse(chunked), { bytes: big.length, length: null, encoding: 'chunked' })
  const empty = JSON.parse((await ask(gateway.port, 'app.example', '/', { method: 'POST', headers: { 'content-length': '0' } })).body)
  t.same(empty, { bytes: 0, length: '0', encoding: null })
})

t.test('an answer sent before the request body ended: the client has it, the connection is not reused', async (t) => {
  const { gateway, upstream } = await routed(t, (socket) => socket.write('HTTP/1.1 413 Payload Too Large\r\nContent-Length: 0\r\n\r\n'))
  const answer = await new Promise<number>((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: gateway.port, method: 'POST', path: '/', headers: { host: 'app.example', 'transfer-encoding': 'chunked' }, agent: false }, (res) => {
      res.resume()
      resolve(res.statusCode as number)
      req.destroy()
    })
    req.on('error', reject)
    req.write('some of the body')
  })
  t.equal(answer, 413)
  t.equal((await ask(gateway.port, 'app.example')).status, 413)
  t.equal(upstream.connections, 2)
})

t.test('a large answer to a slow client waits for it, past the upstream timeout', async (t) => {
  const gateway = await startGateway(t, { upstreamTimeoutMs: 200 })
  const big = Buffer.alloc(16 * 1024 * 1024, 'b')
  const app = await startUpstream(t, 'i1', (req, res) => res.end(big))
  gateway.routes.set('app.example', appRoute('app1', [app]))
  const received = await new Promise<number>((resolve, reject) => {
    request({ host: '127.0.0.1', port: gateway.port, path: '/', headers: { host: 'app.example' }, agent: false }, (res) => {
      let bytes = 0
      res.pause()
      // Longer than the upstream timeout: the gateway must have paused, not timed out.
      setTimeout(() => {
        res.on('data', (chunk: Buffer) => { bytes += chunk.length })
        res.resume()
      }, 400)
      res.on('end', () => resolve(bytes))
      res.on('error', reject)
    }).on('error', reject).end()
  })
  t.equal(received, big.length)
})
