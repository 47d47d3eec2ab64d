import t, { type Test } from 'tap'
import { once } from 'node:events'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { AddressGuard } from '../../../services/outbound/internal-addresses.js'
import { outboundRequest } from '../../../services/outbound/http.js'
import { OutboundPool } from '../../../services/outbound/pool.js'

/** A receiver on every loopback address that counts its connections and says which local address each call reached. */
async function receiver (t: Test, answer?: (request: IncomingMessage, response: ServerResponse, served: number) => void) {
  const sockets: Socket[] = []
  const served = new WeakMap<Socket, number>()
  const server = createServer((request, response) => {
    const count = (served.get(request.socket) ?? 0) + 1
    served.set(request.socket, count)
    if (answer !== undefined) { answer(request, response, count); return }
    response.end(`${request.socket.localAddress ?? ''} ${sockets.indexOf(request.socket)}`)
  })
  server.on('connection', (socket: Socket) => { sockets.push(socket) })
  server.listen(0, '0.0.0.0')
  await once(server, 'listening')
  t.teardown(() => { server.closeAllConnections(); server.close() })
  return { port: (server.address() as AddressInfo).port, sockets }
}

const limits = { timeoutMs: 5000, maxResponseBytes: 1000 }
const post = (url: string) => ({ method: 'POST', url, headers: { 'content-type': 'text/plain' }, body: 'event' })
const text = (result: Awaited<ReturnType<typeof outboundRequest>>): string => result.kind === 'answered' ? result.body.toString() : `${result.kind}`

t.test('calls to the same checked address share one kept connection; another address gets its own', async (t) => {
  const { port, sockets } = await receiver(t)
  let resolvesTo = '127.0.0.1'
  const guard = new AddressGuard({ allowedHosts: ['hooks.test'], resolveAll: async () => [resolvesTo] })
  const pool = new OutboundPool()
  t.teardown(() => { pool.close() })

  t.equal(text(await outboundRequest(guard, post(`http://hooks.test:${port}/`), limits, pool)), '127.0.0.1 0')
  t.equal(text(await outboundRequest(guard, post(`http://hooks.test:${port}/`), limits, pool)), '127.0.0.1 0', 'the second call reused the first connection')
  t.equal(sockets.length, 1)

  // The host now resolves elsewhere: the socket kept for 127.0.0.1 must not carry a call checked at 127.0.0.2.
  resolvesTo = '127.0.0.2'
  t.equal(text(await outboundRequest(guard, post(`http://hooks.test:${port}/`), limits, pool)), '127.0.0.2 1', 'a new connection, to the newly checked address')
  t.equal(pool.size, 2, 'one agent per checked address set')
  t.equal(text(await outboundRequest(guard, post(`http://hooks.test:${port}/`), limits)), '127.0.0.2 2', 'without a pool every call connects afresh')
})

t.test('idle connections close; close() ends the rest', async (t) => {
  const { port, sockets } = await receiver(t)
  const guard = new AddressGuard({ allowedHosts: ['127.0.0.1'] })
  const pool = new OutboundPool({ idleMs: 50, maxSockets: 4, maxTargets: 8 })
  t.teardown(() => { pool.close() })
  await outboundRequest(guard, post(`http://127.0.0.1:${port}/`), limits, pool)
  await once(sockets[0], 'close')
  t.pass('the idle connection was closed by the pool')

  const lasting = new OutboundPool({ idleMs: 60_000, maxSockets: 4, maxTargets: 8 })
  await outboundRequest(guard, post(`http://127.0.0.1:${port}/`), limits, lasting)
  const closed = once(sockets[1], 'close')
  lasting.close()
  await closed
  t.equal(lasting.size, 0)
})

t.test('a kept socket the receiver dropped is replaced once by a fresh connection', async (t) => {
  // Each connection answers its first call only, then drops: a keep-alive the receiver ended as the next call came.
  const { port, sockets } = await receiver(t, (request, response, served) => {
    if (served > 1) { request.socket.destroy(); return }
    response.end('answered')
  })
  const guard = new AddressGuard({ allowedHosts: ['127.0.0.1'] })
  const pool = new OutboundPool()
  t.teardown(() => { pool.close() })
  t.equal(text(await outboundRequest(guard, post(`http://127.0.0.1:${port}/`), limits, pool)), 'answered')
  t.equal(text(await outboundRequest(guard, post(`http://127.0.0.1:${port}/`), limits, pool)), 'answered', 'sent again on a new connection')
  t.equal(sockets.length, 2)

  // A fresh connection that fails the same way is an answer-less call, not sent a third time.
  const { port: dropping } = await receiver(t, (request) => { request.socket.destroy() })
  t.match(await outboundRequest(guard, post(`http://127.0.0.1:${dropping}/`), limits, pool), { kind: 'failed', code: 'ECONNRESET' })
})

t.test('one host whose resolver rotates its addresses keeps one agent; another address set gets its own', async (t) => {
  const pool = new OutboundPool()
  t.teardown(() => { pool.close() })
  const target = (addresses: string[]) => ({ url: new URL('http://hooks.example/'), host: 'hooks.example', port: 80, addresses })
  const first = pool.agent('http:', target(['192.0.2.1', '192.0.2.2']))
  t.equal(pool.agent('http:', target(['192.0.2.2', '192.0.2.1'])), first, 'the rotated answer shares the agent')
  t.not(pool.agent('http:', target(['192.0.2.3'])), first, 'another address set does not')
  t.not(pool.agent('https:', target(['192.0.2.1', '192.0.2.2'])), first, 'nor another protocol')
  t.equal(pool.size, 3)
})
