import t from 'tap'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { once } from 'node:events'
import { WebSocket, WebSocketServer } from 'ws'
import { createClient, type WebSocketConstructor } from '../../sdk/client/index.js'

/**
 * The SDK's WebSocket transport meets a message that is not of its protocol
 * (a proxy's page, a cut frame): before, JSON.parse threw inside the socket's
 * listener, an uncaught error that ended a Node process. Now the connection
 * is dropped and taken up again with the last event id. The peer is a bare
 * `ws` server on loopback, so what it sends is exactly what the test says.
 */
t.test('a message that is not of the realtime protocol drops the connection, which is taken up again with the last event id', async (t) => {
  const server = createServer()
  const sockets = new WebSocketServer({ noServer: true, handleProtocols: () => 'plinth.realtime' })
  const urls: string[] = []
  let connection = 0
  server.on('upgrade', (request, socket, head) => {
    sockets.handleUpgrade(request, socket, head, (ws) => {
      urls.push(request.url ?? '')
      connection++
      if (connection === 1) {
        ws.send(JSON.stringify({ event: 'ready', data: { lastEventId: '7' } }))
        ws.send(JSON.stringify({ id: '8', event: 'create', data: { collection: 'notes', record: { id: 'n1' }, subscriptions: [0], at: '2026-11-29T00:00:00Z' } }))
        ws.send('<html>502 Bad Gateway</html>')
        ws.send(JSON.stringify({ event: 42 }))
      } else {
        ws.send(JSON.stringify({ event: 'ready', data: { lastEventId: '8' } }))
        ws.send(JSON.stringify({ id: '9', event: 'create', data: { collection: 'notes', record: { id: 'n2' }, subscriptions: [0], at: '2026-11-29T00:00:01Z' } }))
      }
    })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(async () => { sockets.close(); server.close() })
  const client = createClient({ baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, projectId: 'p1', WebSocket: WebSocket as unknown as WebSocketConstructor })
  const stop = new AbortController()
  const seen: string[] = []
  for await (const change of client.subscribe([{ collection: 'notes' }], { signal: stop.signal, transport: 'websocket', reconnectDelayMs: 20 })) {
    if (change.type === 'gap') continue
    seen.push(`${change.id}:${change.record.id}`)
    if (seen.length === 2) stop.abort()
  }
  t.same(seen, ['8:n1', '9:n2'], 'the change before the bad message, then the one after reconnecting')
  t.equal(connection, 2, 'one reconnection')
  t.match(urls[1], /lastEventId=8/, 'taken up after the last event seen')
})
