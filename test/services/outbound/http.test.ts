import t from 'tap'
import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { AddressGuard } from '../../../services/outbound/internal-addresses.js'
import { outboundRequest, outboundStream } from '../../../services/outbound/http.js'

t.test('one call through the guard: refused, pinned, capped, never redirected', async (t) => {
  const server = createServer((request, response) => {
    if (request.url === '/redirect') { response.writeHead(307, { location: '/big' }); response.end(); return }
    response.writeHead(200, { 'x-host': request.headers.host ?? '' })
    response.end(request.url === '/big' ? Buffer.alloc(100_000, 'y') : 'small')
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => { server.closeAllConnections(); server.close() })
  const { port } = server.address() as AddressInfo
  const limits = { timeoutMs: 5000, maxResponseBytes: 1000 }
  const get = (url: string) => ({ method: 'GET', url, headers: {} })

  const strict = new AddressGuard({ allowedHosts: [], resolveAll: async () => ['127.0.0.1'] })
  t.match(await outboundRequest(strict, get(`http://127.0.0.1:${port}/`), limits), { kind: 'refused', internal: 'loopback', address: '127.0.0.1' })
  t.match(await outboundRequest(strict, get(`http://anything.example:${port}/`), limits), { kind: 'refused', internal: 'loopback' }, 'a name resolving to loopback too')
  t.match(await outboundRequest(strict, get('ftp://example.com/'), limits), { kind: 'failed', code: 'EPROTOCOL' })
  const nowhere = new AddressGuard({ allowedHosts: [], resolveAll: async () => { throw new Error('ENOTFOUND') } })
  t.match(await outboundRequest(nowhere, get('http://nowhere.example/'), limits), { kind: 'failed', code: 'ENOTFOUND' })

  const allowed = new AddressGuard({ allowedHosts: ['pinned.test'], resolveAll: async () => ['127.0.0.1'] })
  const small = await outboundRequest(allowed, get(`http://pinned.test:${port}/`), limits)
  t.match(small, { kind: 'answered', status: 200, truncated: false, headers: { 'x-host': `pinned.test:${port}` } }, 'connected to the checked address under the URL\'s own name')
  t.equal(small.kind === 'answered' ? small.body.toString() : null, 'small')
  const big = await outboundRequest(allowed, get(`http://pinned.test:${port}/big`), limits)
  t.match(big, { kind: 'answered', status: 200, truncated: true })
  t.equal(big.kind === 'answered' ? big.body.length : 0, 1000, 'read up to the cap, then the connection dropped')
  t.match(await outboundRequest(allowed, get(`http://pinned.test:${port}/redirect`), limits), { kind: 'answered', status: 307, headers: { location: '/big' } }, 'a redirect is an answer')
})

t.test('a streamed call: answered at the headers, the body read as it comes, capped, abortable', async (t) => {
  let finishSlow: () => void = () => {}
  const server = createServer((request, response) => {
    response.writeHead(200, { 'content-type': 'text/event-stream' })
    if (request.url === '/big') { response.end(Buffer.alloc(5000, 'z')); return }
    response.write('data: first\n\n')
    finishSlow = () => response.end('data: last\n\n')
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => { server.closeAllConnections(); server.close() })
  const { port } = server.address() as AddressInfo
  const guard = new AddressGuard({ allowedHosts: ['127.0.0.1'] })
  const limits = { headersTimeoutMs: 5000, idleTimeoutMs: 5000, maxResponseBytes: 1000 }
  const get = (path: string) => ({ method: 'GET', url: `http://127.0.0.1:${port}${path}`, headers: {} })

  t.match(await outboundStream(new AddressGuard({ allowedHosts: [] }), get('/'), limits), { kind: 'refused', internal: 'loopback' })
  const slow = await outboundStream(guard, get('/'), limits)
  if (slow.kind !== 'answered') throw new Error('no answer')
  t.equal(slow.status, 200)
  const reader = slow.body[Symbol.asyncIterator]()
  t.equal(String((await reader.next()).value), 'data: first\n\n', 'the first chunk is read while the server still writes')
  finishSlow()
  t.equal(String((await reader.next()).value), 'data: last\n\n')
  t.equal((await reader.next()).done, true)

  const big = await outboundStream(guard, get('/big'), limits)
  if (big.kind !== 'answered') throw new Error('no answer')
  await t.rejects((async () => { for await (const chunk of big.body) t.ok(chunk) })(), { code: 'E2BIG' }, 'past the cap the body errors rather than ending short')

  const controller = new AbortController()
  const aborted = await outboundStream(guard, get('/'), { ...limits, signal: controller.signal })
  if (aborted.kind !== 'answered') throw new Error('no answer')
  controller.abort()
  await t.rejects((async () => { for await (const chunk of aborted.body) t.ok(chunk) })(), { code: 'ABORT_ERR' }, 'an abort drops the streaming connection')
})
