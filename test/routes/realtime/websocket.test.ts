import t from 'tap'
import { request } from 'node:http'
import { connect } from 'node:net'
import WebSocket from 'ws'
import { notesProject } from './fixtures.js'
import { createClient } from '../../../sdk/client/index.js'

const NOTES = [{ collection: 'notes' }]

/** A real WebSocket client on the realtime path: its messages in order, or the HTTP refusal it met. */
async function openSocket (base: string, projectId: string, subscriptions: unknown, options: { headers?: Record<string, string>, protocols?: string[], query?: string, autoPong?: boolean } = {}) {
  const url = `${base.replace(/^http/, 'ws')}/api/p/${projectId}/realtime?subscriptions=${encodeURIComponent(JSON.stringify(subscriptions))}${options.query ?? ''}`
  const socket = new WebSocket(url, options.protocols ?? ['plinth.realtime'], { headers: options.headers, autoPong: options.autoPong ?? true })
  const messages: any[] = []
  let wake: (() => void) | null = null
  let closed = false
  socket.on('message', (data) => { messages.push(JSON.parse(String(data))); wake?.() })
  socket.on('close', () => { closed = true; wake?.() })
  const opened = await new Promise<{ status: number, body: any } | null>((resolve) => {
    socket.once('open', () => { resolve(null) })
    socket.once('unexpected-response', (_request, response) => {
      let body = ''
      response.on('data', (chunk: Buffer) => { body += String(chunk) })
      response.on('end', () => { resolve({ status: response.statusCode ?? 0, body: JSON.parse(body) }) })
    })
    socket.once('error', () => { resolve({ status: 0, body: null }) })
  })
  let read = 0
  const next = async (...types: string[]): Promise<any> => {
    for (;;) {
      while (read >= messages.length) {
        if (closed) return null
        await new Promise<void>((resolve) => { wake = resolve })
      }
      const message = messages[read++]
      if (types.length === 0 || types.includes(message.event)) return message
    }
  }
  return { socket, refused: opened, next, protocol: socket.protocol, isClosed: () => closed }
}

t.test('a WebSocket subscriber gets the same events as SSE: its own records as its rule shows them', async (t) => {
  const { app, projectId, base, register, write } = await notesProject(t)
  const ann = await register('ann@example.com')
  const bob = await register('bob@example.com')
  const ws = await openSocket(base, projectId, NOTES, { headers: ann.auth })
  t.teardown(() => { ws.socket.terminate() })
  t.equal(ws.refused, null, 'the handshake completes')
  t.equal(ws.protocol, 'plinth.realtime', 'in the realtime subprotocol')
  t.same((await ws.next('ready')).data, { lastEventId: '0', subscriptions: 1 })
  await write('POST', 'notes', bob.auth, { title: 'bob\'s' })
  const mine = await write('POST', 'notes', ann.auth, { title: 'mine', secret: 'pin' })
  const created = await ws.next('create', 'update', 'delete')
  t.match(created, { event: 'create', data: { collection: 'notes', record: { id: mine.id, title: 'mine', owner: ann.id } } })
  t.notOk('secret' in created.data.record, 'the denied field never leaves')
  t.ok(/^\d+$/.test(created.id), 'with an id to resume from')

  // A browser offers the token as a subprotocol; resuming by the lastEventId query parameter.
  const resumed = await openSocket(base, projectId, NOTES, { protocols: ['plinth.realtime', `plinth.bearer.${ann.token}`], query: '&lastEventId=0' })
  t.teardown(() => { resumed.socket.terminate() })
  t.equal(resumed.protocol, 'plinth.realtime', 'the token is never echoed as the protocol')
  t.same((await resumed.next('create')).data.record.id, mine.id, 'what was missed is replayed, bob\'s note skipped')

  const refused = await openSocket(base, projectId, NOTES, { headers: ann.auth })
  t.same([refused.refused?.status, refused.refused?.body.code], [429, 'APP_REALTIME_TOO_MANY_CONNECTIONS'], 'the per-user limit counts both transports')
  const anonymous = await openSocket(base, projectId, NOTES)
  t.same([anonymous.refused?.status, anonymous.refused?.body.code], [401, 'APP_UNAUTHORIZED'], 'the rule\'s refusal, in the envelope, before any switch')
  const bad = await openSocket(base, projectId, { collection: 'notes' }, { headers: bob.auth })
  t.same([bad.refused?.status, bad.refused?.body.code], [400, 'APP_REALTIME_INVALID_SUBSCRIPTION'])

  const elsewhere = new WebSocket(`${base.replace(/^http/, 'ws')}/api/no-such-path`)
  const answer = await new Promise<number>((resolve) => {
    elsewhere.once('unexpected-response', (_request, response) => { resolve(response.statusCode ?? 0) })
    elsewhere.once('error', () => { resolve(0) })
  })
  t.equal(answer, 404, 'an Upgrade to another path is answered as the plain request it is')

  ws.socket.close()
  resumed.socket.close()
  await ws.next('never')
  await resumed.next('never')
  await app.close()
})

t.test('a handshake refused after the subscriber was admitted gives the admission back', async (t) => {
  const { app, projectId, base, register } = await notesProject(t)
  const ann = await register('ann@example.com')
  const url = `${base}/api/p/${projectId}/realtime?subscriptions=${encodeURIComponent(JSON.stringify(NOTES))}`
  // Admitted by the route (auth, subscriptions, the per-user limit of 2), then refused by ws: version 99 is no WebSocket's.
  const headers = { ...ann.auth, connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-version': '99', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==', 'sec-websocket-protocol': 'plinth.realtime' }
  for (let i = 0; i < 4; i++) {
    const status = await new Promise<number>((resolve) => {
      const asked = request(url, { headers })
      asked.once('response', (response) => { response.resume(); resolve(response.statusCode ?? 0) })
      asked.once('upgrade', (_response, socket) => { socket.destroy(); resolve(101) })
      asked.once('error', () => { resolve(0) })
      asked.end()
    })
    t.equal(status, 400, `refused handshake ${i + 1}: 400 from the WebSocket server, not 429 from a limit full of abandoned admissions`)
  }
  for (let polls = 0; polls < 500 && app.realtime.hub.size > 0; polls++) await new Promise((resolve) => setTimeout(resolve, 10))
  t.equal(app.realtime.hub.size, 0, 'no connection is left held')
  const ws = await openSocket(base, projectId, NOTES, { headers: ann.auth })
  t.teardown(() => { ws.socket.terminate() })
  t.equal(ws.refused, null, 'past the per-user limit of refused handshakes, a real one is still let in')
  t.same((await ws.next('ready')).data.subscriptions, 1)
  ws.socket.close()
  await ws.next('never')
  await app.close()
})

t.test('a deleted user\'s WebSocket ends revoked, and the SDK subscribes over WebSocket when asked', async (t) => {
  const { app, admin, projectId, base, register, write } = await notesProject(t, { REALTIME_RECHECK_MS: '3600000' })
  const { call } = await import('../../helper.js')
  const usersDefinition = `/api/projects/${projectId}/collections/_users`
  const current = (await call(app, 'GET', usersDefinition, admin.auth)).body.data
  t.equal((await call(app, 'PUT', usersDefinition, admin.auth, { fields: current.fields, methods: { delete: { enabled: true, rule: null } } })).status, 200)
  const carl = await register('carl@example.com')
  const ws = await openSocket(base, projectId, NOTES, { headers: carl.auth })
  t.teardown(() => { ws.socket.terminate() })
  await ws.next('ready')
  t.equal((await call(app, 'DELETE', `/api/p/${projectId}/_users/${carl.id}`, admin.auth)).status, 200)
  t.equal((await ws.next('end'))?.data.reason, 'revoked')
  t.equal(await ws.next(), null, 'and the server closes the socket')

  await register('ann@example.com')
  const client = createClient({ baseUrl: base, projectId, WebSocket: WebSocket as never })
  await client.auth.login({ email: 'ann@example.com', password: 'correct horse battery' })
  const stop = new AbortController()
  t.teardown(() => { stop.abort() })
  const changes = client.subscribe<{ title: string }>(NOTES, { signal: stop.signal, transport: 'websocket', reconnectDelayMs: 50 })
  const first = changes.next()
  // The SDK's socket is open once the hub holds it; then the write is past its head.
  while (app.realtime.hub.size === 0) await new Promise((resolve) => setTimeout(resolve, 10))
  const note = await write('POST', 'notes', { authorization: `Bearer ${(await client.auth.session())?.accessToken ?? ''}` }, { title: 'over the socket' })
  t.match((await first).value, { type: 'create', collection: 'notes', record: { id: note.id, title: 'over the socket' } })
  await changes.return(undefined)
  const refused = client.subscribe([{ collection: 'nothing' }], { signal: stop.signal, transport: 'websocket', reconnectDelayMs: 50 })
  await t.rejects(refused.next(), { code: 'APP_COLLECTION_NOT_FOUND' }, 'a refused handshake is explained by the server\'s envelope, not retried')
})

/** Writes `data` on a fresh socket; resolves with what the server sent once it closes it, or after 8 s (then `timedOut`). */
async function rawExchange (base: string, data: string): Promise<{ status: number, body: any, timedOut: boolean }> {
  const { hostname, port } = new URL(base)
  const [answer, timedOut] = await new Promise<[string, boolean]>((resolve) => {
    const socket = connect(Number(port), hostname, () => { socket.write(data) })
    const received: Buffer[] = []
    const guard = setTimeout(() => { socket.destroy(); resolve([Buffer.concat(received).toString(), true]) }, 8000)
    socket.on('data', (chunk: Buffer) => received.push(chunk))
    socket.on('error', () => {})
    socket.on('close', () => { clearTimeout(guard); resolve([Buffer.concat(received).toString(), false]) })
  })
  const split = answer.indexOf('\r\n\r\n')
  const body = answer.slice(split + 4)
  return { status: Number(/^HTTP\/1\.1 (\d{3}) /.exec(answer)?.[1] ?? 0), body: body === '' ? null : JSON.parse(body), timedOut }
}

t.test('an Upgrade on another path is served as a plain request: its body is read and the request timeout holds', async (t) => {
  const { projectId, base } = await notesProject(t, { HEADERS_TIMEOUT_SECONDS: '1', REQUEST_TIMEOUT_SECONDS: '2' })
  const body = JSON.stringify({ email: 'ann@example.com', password: 'correct horse battery' })
  const head = (length: number) => `POST /api/p/${projectId}/auth/register HTTP/1.1\r\nHost: plinth.test\r\nConnection: Upgrade, close\r\nUpgrade: websocket\r\n` +
    `Content-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`
  const served = await rawExchange(base, head(Buffer.byteLength(body)) + body)
  t.same([served.status, served.body?.data?.user?.email, served.timedOut], [201, 'ann@example.com', false], 'registered from the body it sent')
  const stalled = await rawExchange(base, head(200) + body)
  t.same([stalled.status, stalled.body?.code, stalled.timedOut], [408, 'APP_REQUEST_TIMEOUT', false], 'half a body: 408 at the request limit, then closed')
  const h2c = await rawExchange(base, `GET /api/p/${projectId}/realtime?subscriptions=${encodeURIComponent(JSON.stringify(NOTES))} HTTP/1.1\r\nHost: plinth.test\r\nConnection: Upgrade, HTTP2-Settings, close\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n`)
  t.same([h2c.status, h2c.body?.code], [401, 'APP_UNAUTHORIZED'], 'an Upgrade to another protocol on the realtime path is a plain request too')
})

t.test('a socket that stopped answering pings is closed after two unanswered beats, freeing its place; one that answers stays', async (t) => {
  const { app, projectId, base, register, write } = await notesProject(t, { REALTIME_HEARTBEAT_MS: '400' })
  const ann = await register('ann@example.com')
  const silent = await openSocket(base, projectId, NOTES, { headers: ann.auth, autoPong: false })
  const answering = await openSocket(base, projectId, NOTES, { headers: ann.auth })
  t.teardown(() => { silent.socket.terminate(); answering.socket.terminate() })
  await silent.next('ready')
  await answering.next('ready')
  // The whole process stalls just after the answering peer's pong was written: the next beat's timer is overdue and
  // runs before the server reads that pong. A live peer must not be cut for the server's own pause.
  const stalled = new Promise<void>((resolve) => {
    answering.socket.once('ping', () => { Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1_000); resolve() })
  })
  await stalled
  const ended = await Promise.race([silent.next('never').then(() => 'closed'), new Promise((resolve) => { setTimeout(resolve, 15_000, 'still open').unref() })])
  t.equal(ended, 'closed', 'the peer that never pongs is closed')
  for (let polls = 0; polls < 100 && app.realtime.hub.size > 1; polls++) await new Promise((resolve) => setTimeout(resolve, 10))
  t.equal(app.realtime.hub.size, 1, 'its place under the per-user limit is given back')
  const note = await write('POST', 'notes', ann.auth, { title: 'after many heartbeats' })
  t.equal((await answering.next('create'))?.data.record.id, note.id, 'the socket that answers its pings is still served')
  t.notOk(answering.isClosed())
  const again = await openSocket(base, projectId, NOTES, { headers: ann.auth })
  t.teardown(() => { again.socket.terminate() })
  t.equal(again.refused, null, 'a new socket takes the freed place')
})
