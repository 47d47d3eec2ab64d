import t, { type Test } from 'tap'
import { connect, type AddressInfo } from 'node:net'
import Fastify, { type FastifyPluginAsync } from 'fastify'
import { plinth } from '../app.js'
import { compileAllSchemas, fastifyOptions, serializedUnions } from '../options.js'
import { buildTestApp, testConfig, type TestApp } from './helper.js'

/** Writes `data` on a fresh socket and keeps it open, resolving with everything the server sent once it closes the socket. */
async function stallAfter (port: number, data: string): Promise<string> {
  return await new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => { socket.write(data) })
    const received: Buffer[] = []
    socket.on('data', (chunk: Buffer) => received.push(chunk))
    socket.on('error', reject)
    socket.on('close', () => { resolve(Buffer.concat(received).toString()) })
  })
}

function envelopeOf (answer: string): { status: number, body: { success: boolean, code: string } } {
  const [head, body] = answer.split('\r\n\r\n')
  return { status: Number(/^HTTP\/1\.1 (\d{3}) /.exec(head)?.[1]), body: JSON.parse(body) }
}

t.test('slow clients are answered 408 and disconnected at the configured limits; others are served meanwhile', async (t) => {
  const app = await buildTestApp(t, { env: { HEADERS_TIMEOUT_SECONDS: '1', REQUEST_TIMEOUT_SECONDS: '2', CONNECTION_TIMEOUT_SECONDS: '30', KEEP_ALIVE_TIMEOUT_SECONDS: '5' } })
  t.same([app.server.headersTimeout, app.server.requestTimeout, app.server.timeout, app.server.keepAliveTimeout], [1000, 2000, 30_000, 5000], 'the options factory hands the limits to the Node server')
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as AddressInfo

  const halfHeader = stallAfter(port, 'GET /api/auth/me HTTP/1.1\r\nHost: plinth.test\r\nAuthoriza')
  const silent = stallAfter(port, '')
  const halfBody = stallAfter(port, 'POST /api/auth/login HTTP/1.1\r\nHost: plinth.test\r\nContent-Type: application/json\r\nContent-Length: 60\r\n\r\n{"email":')

  const normal = await fetch(`http://127.0.0.1:${port}/healthz`)
  t.equal(normal.status, 200, 'a normal request is served while the slow ones hang')
  t.equal(((await normal.json()) as { success: boolean }).success, true)

  for (const [name, stalled] of [['half a header', halfHeader], ['nothing at all', silent], ['half a body', halfBody]] as const) {
    const { status, body } = envelopeOf(await stalled)
    t.same([status, body.success, body.code], [408, false, 'APP_REQUEST_TIMEOUT'], `${name}: 408 in the envelope, then the socket is closed`)
  }
})

t.test('a header limit above Node\'s default request limit is accepted when the request limit is raised with it', async (t) => {
  const app = await buildTestApp(t, { env: { HEADERS_TIMEOUT_SECONDS: '400', REQUEST_TIMEOUT_SECONDS: '500' } })
  t.same([app.server.headersTimeout, app.server.requestTimeout], [400_000, 500_000])
})

// Echoes what the app takes for the client's address, the one rate limits and logs use.
const ipProbe: FastifyPluginAsync = async (app) => {
  app.get('/api/probe/ip', { config: { auth: 'none' } }, async (request) => ({ success: true, data: { ip: request.ip } }))
}

let attempt = 0
/** One register attempt through inject from `remoteAddress`; password equal to the email, so no account is ever made. */
async function register (app: TestApp, remoteAddress: string, forwardedFor?: string): Promise<number> {
  const email = `probe${++attempt}@example.com`
  const res = await app.inject({
    method: 'POST',
    url: '/api/auth/register',
    remoteAddress,
    headers: forwardedFor === undefined ? {} : { 'x-forwarded-for': forwardedFor },
    payload: { email, password: email, name: 'Probe' }
  })
  return res.statusCode
}

async function ipSeen (app: TestApp, remoteAddress: string, forwardedFor: string): Promise<string> {
  return (await app.inject({ url: '/api/probe/ip', remoteAddress, headers: { 'x-forwarded-for': forwardedFor } })).json().data.ip
}

/** `allowed` attempts from one client pass the limiter; the next is 429. */
async function budget (t: Test, app: TestApp, allowed: number, from: () => Promise<number>, name: string): Promise<void> {
  for (let i = 0; i < allowed; i++) t.not(await from(), 429, `${name}: attempt ${i + 1} within the budget`)
  t.equal(await from(), 429, `${name}: over the budget`)
}

const PROXY = '10.0.0.1'
const ANN = '198.51.100.1'
const BOB = '198.51.100.2'

t.test('TRUST_PROXY off: X-Forwarded-For is ignored, everyone behind a proxy shares its address', async (t) => {
  const app = await buildTestApp(t, { env: { AUTH_RATE_LIMIT_MAX: '2', AUTH_RATE_LIMIT_WINDOW_SECONDS: '86400' }, extra: ipProbe })
  t.equal(await ipSeen(app, PROXY, ANN), PROXY)
  await register(app, PROXY, ANN)
  await register(app, PROXY, ANN)
  t.equal(await register(app, PROXY, BOB), 429, 'Bob is refused on the budget Ann spent: both count as the proxy')
})

t.test('TRUST_PROXY as addresses: clients behind the proxy get their own budgets, an untrusted hop cannot spoof', async (t) => {
  const app = await buildTestApp(t, { env: { AUTH_RATE_LIMIT_MAX: '2', AUTH_RATE_LIMIT_WINDOW_SECONDS: '86400', TRUST_PROXY: '10.0.0.0/24, 192.0.2.10' }, extra: ipProbe })
  t.equal(await ipSeen(app, PROXY, ANN), ANN, 'the client behind a trusted proxy')
  t.equal(await ipSeen(app, '192.0.2.10', `${ANN}, ${PROXY}`), ANN, 'through two trusted proxies')
  t.equal(await ipSeen(app, PROXY, `${BOB}, ${ANN}`), ANN, 'a value the client put in the header itself is not believed')
  t.equal(await ipSeen(app, '203.0.113.9', ANN), '203.0.113.9', 'a direct client cannot name another address')

  await budget(t, app, 2, async () => await register(app, PROXY, ANN), 'Ann behind the proxy')
  t.not(await register(app, PROXY, BOB), 429, 'Bob behind the same proxy has his own budget')
  let spoof = 0
  await budget(t, app, 2, async () => await register(app, '203.0.113.9', `192.0.2.${++spoof}`), 'a direct client rotating X-Forwarded-For')
  await budget(t, app, 0, async () => await register(app, PROXY, `${BOB}, ${ANN}`), 'Ann prefixing Bob\'s address through the proxy')
})

t.test('TRUST_PROXY as a hop count: that many hops in front of the server are proxies', async (t) => {
  const app = await buildTestApp(t, { env: { AUTH_RATE_LIMIT_MAX: '2', AUTH_RATE_LIMIT_WINDOW_SECONDS: '86400', TRUST_PROXY: '1' }, extra: ipProbe })
  t.equal(await ipSeen(app, PROXY, ANN), ANN)
  t.equal(await ipSeen(app, PROXY, `${BOB}, ${ANN}`), ANN, 'only one hop is believed')
  await budget(t, app, 2, async () => await register(app, PROXY, ANN), 'Ann')
  t.not(await register(app, PROXY, BOB), 429, 'Bob has his own budget')
})

t.test('schemas are compiled on first use, and every route\'s schemas compile', async (t) => {
  const config = testConfig(t)
  const options = fastifyOptions(config)
  const app = Fastify(options)
  await app.register(plinth, { config })
  await app.ready()
  t.teardown(async () => { await app.close() })
  // Serving a request compiles what that route needs, and validation answers as before.
  const refused = await app.inject({ method: 'POST', url: '/api/auth/register', payload: { email: 'not an address', password: 'x' } })
  t.equal(refused.statusCode, 400, 'a body schema compiled on its first request still refuses bad input')
  t.equal(refused.json().code, 'APP_VALIDATION_FAILED')
  const compiled = compileAllSchemas(options)
  t.ok(compiled > 500, `every route's validators and serializers compile (${compiled})`)
  t.equal(compileAllSchemas(options), 0, 'nothing is left to compile')
  const again = await app.inject({ method: 'POST', url: '/api/auth/register', payload: { email: 'not an address', password: 'x' } })
  t.equal(again.statusCode, 400)
})

t.test('a schema the compiler cannot take fails compileAllSchemas, not only its first request', async (t) => {
  const options = fastifyOptions(testConfig(t))
  const app = Fastify(options)
  app.post('/broken', { schema: { body: { type: 'object', properties: { n: { type: 'no such type' } } } } }, async () => ({}))
  app.get('/broken-answer', { schema: { response: { 200: { type: 'object', properties: { n: { $ref: 'nowhere#' } } } } } }, async () => ({ n: 1 }))
  await app.ready()
  t.teardown(async () => { await app.close() })
  t.throws(() => compileAllSchemas(options))
  t.equal((await app.inject({ method: 'POST', url: '/broken', payload: {} })).statusCode, 500, 'its first request fails as the compiler does')
})

t.test('a union of two objects, one requiring a property the other lacks, is serialized by that property alone', async (t) => {
  const app = Fastify(fastifyOptions(testConfig(t)))
  app.addSchema({ $id: 'Thing', type: 'object', properties: { id: { type: 'string' }, at: { type: 'string', format: 'date-time' }, size: { type: 'integer' } }, required: ['id', 'at', 'size'] })
  app.addSchema({ $id: 'Gone', type: 'object', properties: { id: { type: 'string' }, deleted: { const: true } }, required: ['id', 'deleted'] })
  const things = [{ id: 'a', at: '2026-11-28T10:00:00.000Z', size: 2, secret: 'x' }, { id: 'b', deleted: true, note: 'dropped' }, { id: 'c', at: 'not a date-time', size: 3 }]
  const page = { type: 'object', properties: { items: { type: 'array', items: { anyOf: [{ $ref: 'Thing' }, { $ref: 'Gone' }] } } } }
  app.get('/page', { schema: { response: { 200: page } } }, async () => ({ items: things }))
  await app.ready()
  t.teardown(async () => { await app.close() })
  const answer = await app.inject({ method: 'GET', url: '/page' })
  // Told apart by `deleted`, a thing is not validated whole first: one whose date-time is off is still written as a thing.
  t.equal(answer.statusCode, 200, answer.body)
  t.same(answer.json().items, [{ id: 'a', at: '2026-11-28T10:00:00.000Z', size: 2 }, { id: 'b', deleted: true }, { id: 'c', at: 'not a date-time', size: 3 }], 'each written by its own schema, undeclared fields dropped')
  t.same(serializedUnions(page, { Thing: { type: 'object', properties: {}, required: [] }, Gone: { type: 'object', properties: {}, required: ['deleted'] } }), {
    type: 'object', properties: { items: { type: 'array', items: { if: { type: 'object', required: ['deleted'] }, then: { $ref: 'Gone' }, else: { $ref: 'Thing' } } } }
  }, 'the schema the serializer is given; the route keeps its own')
})

t.test('routes answering with the same schema share one serializer; a different schema gets its own', async (t) => {
  const app = Fastify(fastifyOptions(testConfig(t)))
  const thing = { type: 'object', properties: { id: { type: 'string' } } }
  const other = { type: 'object', properties: { n: { type: 'integer' } } }
  app.get('/a', { schema: { response: { 200: thing } } }, async () => ({ id: 'a', n: 1 }))
  app.get('/b', { schema: { response: { 200: structuredClone(thing), 404: other } } }, async (_request, reply) => await reply.code(404).send({ id: 'b', n: 2 }))
  app.get('/c', { schema: { response: { 200: other } } }, async () => ({ id: 'c', n: 3 }))
  await app.ready()
  t.teardown(async () => { await app.close() })
  // Each written by its own route and status's schema, whichever compiled first.
  t.same((await app.inject({ url: '/a' })).json(), { id: 'a' })
  t.same((await app.inject({ url: '/b' })).json(), { n: 2 })
  t.same((await app.inject({ url: '/c' })).json(), { n: 3 })
})
