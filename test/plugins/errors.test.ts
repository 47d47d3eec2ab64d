import t from 'tap'
import { connect, type AddressInfo } from 'node:net'
import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsync } from 'fastify'
import { buildTestApp, signUp } from '../helper.js'
import { MongoServerSelectionError } from 'mongodb'
import { AppError } from '../../services/platform/errors.js'
import { translate } from '../../services/store/mongo/translate.js'
import { Envelope, errorResponses } from '../../schemas/envelope.js'

// Probe routes exercise the error plugin with a real body schema and thrown errors.
const probes: FastifyPluginAsync = async (app) => {
  app.post('/api/probe', {
    config: { auth: 'none' },
    schema: {
      body: Type.Object({
        name: Type.String({ minLength: 1 }),
        age: Type.Optional(Type.Integer({ minimum: 0 })),
        nested: Type.Optional(Type.Object({ tags: Type.Array(Type.String()) }))
      }, { additionalProperties: false }),
      response: { 200: Envelope(Type.Object({ name: Type.String() })), ...errorResponses(400, 413, 415) }
    }
  }, async (request) => ({ success: true, data: { name: (request.body as { name: string }).name } }))
  app.get('/api/probe/coded', { config: { auth: 'none' } }, async () => { throw new AppError('APP_THING_NOT_FOUND', 404, 'Thing not found', { ids: ['x'] }) })
  app.get('/api/probe/crash', { config: { auth: 'none' } }, async () => { throw new Error('secret internal detail at /srv/db.ts:12') })
  app.get('/api/probe/item/:id', { config: { auth: 'none' } }, async () => ({ success: true, data: {} }))
  app.get('/api/probe/limited', { config: { auth: 'none' } }, async () => { throw new AppError('APP_RATE_LIMITED', 429, 'Slow down', { retryAfterSeconds: 7 }) })
  // What the MongoDB engine throws when no primary answers within the server-selection timeout.
  app.get('/api/probe/store-down', { config: { auth: 'none' } }, async () => translate(new MongoServerSelectionError('Server selection timed out after 30000 ms to db0.internal:27017', {} as never), 'records'))
}

t.test('error envelope for every kind of bad input', async (t) => {
  const app = await buildTestApp(t, { env: { BODY_LIMIT: '2048' }, extra: probes })
  const json = { 'content-type': 'application/json' }
  const cases: Array<{ name: string, method: 'GET' | 'POST', url: string, headers?: Record<string, string>, payload?: string, status: number, code: string, message?: RegExp }> = [
    { name: 'malformed JSON', method: 'POST', url: '/api/probe', headers: json, payload: '{"name": ', status: 400, code: 'APP_INVALID_JSON' },
    { name: 'empty JSON body', method: 'POST', url: '/api/probe', headers: json, payload: '', status: 400, code: 'APP_INVALID_JSON' },
    { name: 'wrong content type', method: 'POST', url: '/api/probe', headers: { 'content-type': 'application/x-unknown' }, payload: 'name=x', status: 415, code: 'APP_UNSUPPORTED_MEDIA_TYPE' },
    { name: 'body too large', method: 'POST', url: '/api/probe', headers: json, payload: JSON.stringify({ name: 'x'.repeat(5000) }), status: 413, code: 'APP_PAYLOAD_TOO_LARGE' },
    { name: 'missing field', method: 'POST', url: '/api/probe', headers: json, payload: '{}', status: 400, code: 'APP_VALIDATION_FAILED', message: /^body\.name is required/ },
    { name: 'wrong type in nested field', method: 'POST', url: '/api/probe', headers: json, payload: JSON.stringify({ name: 'a', nested: { tags: ['a', 5] } }), status: 400, code: 'APP_VALIDATION_FAILED', message: /^body\.nested\.tags\.1 / },
    { name: 'unknown field', method: 'POST', url: '/api/probe', headers: json, payload: JSON.stringify({ name: 'a', admin: true }), status: 400, code: 'APP_VALIDATION_FAILED', message: /^body\.admin is not an allowed field/ },
    { name: 'out of range', method: 'POST', url: '/api/probe', headers: json, payload: JSON.stringify({ name: 'a', age: -1 }), status: 400, code: 'APP_VALIDATION_FAILED', message: /^body\.age / },
    { name: 'unknown route', method: 'GET', url: '/api/nowhere?x=1', status: 404, code: 'APP_ROUTE_NOT_FOUND', message: /GET \/api\/nowhere$/ },
    { name: 'wrong method on a route', method: 'GET', url: '/api/probe', status: 405, code: 'APP_METHOD_NOT_ALLOWED', message: /^GET is not allowed on \/api\/probe; it takes POST$/ },
    { name: 'malformed percent-encoding in a path parameter', method: 'GET', url: '/api/probe/item/%zz', status: 400, code: 'APP_BAD_URL', message: /^The URL is malformed$/ },
    { name: 'a lone % in a path parameter', method: 'GET', url: '/api/probe/item/%', status: 400, code: 'APP_BAD_URL' },
    { name: 'overlong path parameter', method: 'GET', url: `/api/probe/item/${'x'.repeat(101)}`, status: 414, code: 'APP_URI_TOO_LONG' },
    { name: 'coded service error', method: 'GET', url: '/api/probe/coded', status: 404, code: 'APP_THING_NOT_FOUND', message: /^Thing not found$/ },
    { name: 'unexpected crash', method: 'GET', url: '/api/probe/crash', status: 500, code: 'APP_INTERNAL', message: /^Internal server error$/ }
  ]
  for (const c of cases) {
    const res = await app.inject({ method: c.method, url: c.url, headers: c.headers, payload: c.payload })
    t.equal(res.statusCode, c.status, `${c.name}: status`)
    t.match(res.headers['content-type'], /application\/json/, `${c.name}: JSON`)
    const body = res.json()
    t.equal(body.success, false, `${c.name}: success false`)
    t.equal(body.code, c.code, `${c.name}: code`)
    t.type(body.message, 'string', `${c.name}: message`)
    if (c.message !== undefined) t.match(body.message, c.message, `${c.name}: message text`)
    t.notMatch(res.body, /at .*\.ts:\d+|secret internal|stack/i, `${c.name}: no internals leak`)
  }

  const wrongMethod = await app.inject({ method: 'DELETE', url: '/api/probe/item/1?x=2' })
  t.same([wrongMethod.statusCode, wrongMethod.headers.allow], [405, 'GET, HEAD'], 'a wrong method on a path that exists is 405, with Allow naming what it takes')
  const unknownPath = await app.inject({ method: 'DELETE', url: '/api/probe/elsewhere/1' })
  t.same([unknownPath.statusCode, unknownPath.headers.allow], [404, undefined], 'a path no method takes stays 404')

  const coded = await app.inject({ url: '/api/probe/coded' })
  t.same(coded.json().details, { ids: ['x'] }, 'details travel with the envelope')
  const limited = await app.inject({ url: '/api/probe/limited' })
  t.equal(limited.statusCode, 429)
  t.equal(limited.headers['retry-after'], '7', 'Retry-After is set from the error')
  const storeDown = await app.inject({ url: '/api/probe/store-down' })
  t.same([storeDown.statusCode, storeDown.headers['retry-after'], storeDown.json().code], [503, '5', 'APP_STORE_UNAVAILABLE'], 'a store that does not answer is 503 with Retry-After, not 500')
  t.notMatch(storeDown.json().message, /db0\.internal/, "the driver's message stays in the log")

  const ok = await app.inject({ method: 'POST', url: '/api/probe', headers: json, payload: JSON.stringify({ name: 'ann', age: 3 }) })
  t.equal(ok.statusCode, 200)
  t.same(ok.json(), { success: true, data: { name: 'ann' } })

  const validation = await app.inject({ method: 'POST', url: '/api/probe', headers: json, payload: '{}' })
  t.same(validation.json().details, { fields: [{ path: 'body.name', message: 'is required' }] }, 'details list the offending fields')
})

t.test('an empty JSON body is fine on a DELETE', async (t) => {
  const app = await buildTestApp(t, {
    extra: async (app) => { app.delete('/api/probe/:id', { config: { auth: 'none' } }, async () => ({ success: true, data: { deleted: true } })) }
  })
  const res = await app.inject({ method: 'DELETE', url: '/api/probe/1', headers: { 'content-type': 'application/json' } })
  t.equal(res.statusCode, 200)
  const proto = await app.inject({ method: 'POST', url: '/api/probe/1', headers: { 'content-type': 'application/json' }, payload: '{"__proto__": {"x": 1}}' })
  t.equal(proto.statusCode, 400, 'prototype poisoning is refused')
})

/** Sends `request` as raw bytes and resolves with the server's whole answer once it closes the socket. */
async function rawExchange (port: number, request: string): Promise<{ status: number, head: string, body: { success: boolean, code: string, message: string } }> {
  return await new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => { socket.write(request) })
    const received: Buffer[] = []
    socket.on('data', (chunk: Buffer) => received.push(chunk))
    socket.on('error', reject)
    socket.on('close', () => {
      const [head, body] = Buffer.concat(received).toString().split('\r\n\r\n')
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3}) /.exec(head)?.[1]), head, body: JSON.parse(body) })
    })
  })
}

t.test('URLs the router refuses and requests the HTTP parser refuses still answer in the envelope', async (t) => {
  const app = await buildTestApp(t)
  const { auth } = await signUp(app, 'ann@example.com')
  const routed: Array<[string, string, number, string]> = [
    ['bad percent-encoding in the path', '/api/projects/%E0%A4%A', 400, 'APP_BAD_URL'],
    ['a lone percent sign in the path', '/api/auth/me%', 400, 'APP_BAD_URL'],
    ['bad percent-encoding in the query', '/api/projects?orgId=%E0%A4%A', 400, 'APP_VALIDATION_FAILED'],
    ['a path parameter over maxParamLength', `/api/projects/${'a'.repeat(101)}`, 414, 'APP_URI_TOO_LONG'],
    ['a data API path parameter over maxParamLength', `/api/p/${'a'.repeat(101)}/posts`, 414, 'APP_URI_TOO_LONG']
  ]
  for (const [name, url, status, code] of routed) {
    const res = await app.inject({ url, headers: auth })
    t.same([res.statusCode, res.json().success, res.json().code], [status, false, code], name)
    t.match(res.headers['content-type'], /^application\/json/, `${name}: JSON`)
  }

  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as AddressInfo
  const raw: Array<[string, string, number, string]> = [
    ['headers over Node\'s limit', `GET /api/auth/me HTTP/1.1\r\nHost: plinth.test\r\nX-Padding: ${'a'.repeat(20_000)}\r\n\r\n`, 431, 'APP_HEADERS_TOO_LARGE'],
    ['a request line that is not HTTP', 'HELLO THERE\r\n\r\n', 400, 'APP_MALFORMED_REQUEST'],
    ['a header name with a space', 'GET /api/auth/me HTTP/1.1\r\nHost: plinth.test\r\nBad Header: x\r\n\r\n', 400, 'APP_MALFORMED_REQUEST'],
    ['Content-Length beside chunked encoding', 'POST /api/auth/login HTTP/1.1\r\nHost: plinth.test\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n', 400, 'APP_MALFORMED_REQUEST'],
    ['bad percent-encoding, over a socket', 'GET /api/projects/%E0%A4%A HTTP/1.1\r\nHost: plinth.test\r\nConnection: close\r\n\r\n', 400, 'APP_BAD_URL']
  ]
  for (const [name, request, status, code] of raw) {
    const answer = await rawExchange(port, request)
    t.same([answer.status, answer.body.success, answer.body.code], [status, false, code], name)
    t.match(answer.head, /\r\ncontent-type: application\/json/i, `${name}: JSON`)
    t.type(answer.body.message, 'string')
  }
})

t.test('answers to HEAD carry no body, those of the HTTP parser\'s refusals included', async (t) => {
  const app = await buildTestApp(t)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as AddressInfo
  const exchange = async (request: Buffer): Promise<{ head: string, rest: Buffer }> => await new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => { socket.write(request) })
    const received: Buffer[] = []
    socket.on('data', (chunk: Buffer) => received.push(chunk))
    socket.on('error', reject)
    socket.on('close', () => {
      const all = Buffer.concat(received)
      const end = all.indexOf('\r\n\r\n')
      resolve({ head: all.subarray(0, end).toString('latin1'), rest: all.subarray(end + 4) })
    })
  })
  const withByte = (method: string) => Buffer.concat([Buffer.from(`${method} /api/\xff`, 'latin1'), Buffer.from(' HTTP/1.1\r\nHost: plinth.test\r\n\r\n')])
  const headAnswer = await exchange(withByte('HEAD'))
  t.match(headAnswer.head, /^HTTP\/1\.1 400 /, 'a raw 0xFF byte in the path is refused')
  t.match(headAnswer.head, /\r\nContent-Length: \d+/i, 'with the headers GET would get')
  t.equal(headAnswer.rest.length, 0, 'and no body')
  const getAnswer = await exchange(withByte('GET'))
  t.match(JSON.parse(getAnswer.rest.toString()), { success: false, code: 'APP_MALFORMED_REQUEST' }, 'GET gets the envelope')
  const obsFold = await exchange(Buffer.from('HEAD /healthz HTTP/1.1\r\nHost: plinth.test\r\nX-A: 1\r\n folded\r\n\r\n'))
  t.same([obsFold.head.split('\r\n')[0], obsFold.rest.length], ['HTTP/1.1 400 Bad Request', 0], 'another refused HEAD: no body')
  const badChunk = await exchange(Buffer.from('HEAD /healthz HTTP/1.1\r\nHost: plinth.test\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n'))
  t.same([badChunk.head.split('\r\n')[0], badChunk.rest.length], ['HTTP/1.1 400 Bad Request', 0], 'a HEAD refused in its body: no body')
  const routed = await exchange(Buffer.from('HEAD /api/nothing-here HTTP/1.1\r\nHost: plinth.test\r\nConnection: close\r\n\r\n'))
  t.same([routed.head.split('\r\n')[0], routed.rest.length], ['HTTP/1.1 404 Not Found', 0], 'a routed 404 to HEAD: no body')
})

t.test('a request that arrives while the server drains is shed with 503 in the envelope', async (t) => {
  let release = (): void => {}
  const held = new Promise<void>((resolve) => { release = resolve })
  let started = (): void => {}
  const slowStarted = new Promise<void>((resolve) => { started = resolve })
  let draining = (): void => {}
  const drainingSeen = new Promise<void>((resolve) => { draining = resolve })
  const slow: FastifyPluginAsync = async (app) => {
    app.get('/api/probe/slow', { config: { auth: 'none' } }, async () => { started(); await held; return { success: true, data: { done: true } } })
    // Runs after the errors plugin's own preClose hook (registered earlier), so the server is draining by then.
    app.addHook('preClose', async () => { draining() })
  }
  const app = await buildTestApp(t, { extra: slow })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as AddressInfo
  const socket = connect(port, '127.0.0.1')
  let received = ''
  socket.on('data', (chunk) => { received += chunk.toString() })
  const ended = new Promise<void>((resolve) => socket.on('close', () => resolve()))
  socket.write('GET /api/probe/slow HTTP/1.1\r\nHost: x\r\n\r\n')
  await slowStarted
  const closing = app.close()
  await drainingSeen
  // The connection is busy, so the server keeps it open while it drains; the next request on it arrives now.
  socket.write('GET /api/auth/me HTTP/1.1\r\nHost: x\r\n\r\n')
  await new Promise((resolve) => setImmediate(resolve))
  release()
  await ended
  await closing
  const answers = received.split(/(?=HTTP\/1\.1 )/)
  t.match(answers[0], /^HTTP\/1\.1 200/, 'the request under way finishes')
  t.match(answers[1], /^HTTP\/1\.1 503/, 'the next one is shed')
  t.same(JSON.parse(answers[1].slice(answers[1].indexOf('\r\n\r\n') + 4)), { success: false, code: 'APP_SHUTTING_DOWN', message: 'The server is shutting down; retry the request', details: { retryAfterSeconds: 1 } }, 'in the envelope')
  t.match(answers[1], /\r\nretry-after: 1\r\n/i, 'with Retry-After')
})
