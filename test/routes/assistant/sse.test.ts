import t from 'tap'
import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { eventSender } from '../../../routes/assistant/sse.js'

t.test('an event written to a stream has left the process when the write returns, not at the next tick (a real chunked response on loopback)', async (t) => {
  const pending: number[] = []
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8' })
    const send = eventSender(res)
    send('id: 1\nevent: text.delta\ndata: {}\n\n')
    // Bytes the socket still holds (corked) count here: after a plain `write`, the headers and the event wait for the next tick.
    pending.push(res.socket?.writableLength ?? -1)
    send('id: 2\nevent: run.completed\ndata: {}\n\n')
    pending.push(res.socket?.writableLength ?? -1)
    res.end()
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => { server.close() })
  const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`)
  t.equal(await res.text(), 'id: 1\nevent: text.delta\ndata: {}\n\nid: 2\nevent: run.completed\ndata: {}\n\n', 'both events, whole and in order')
  t.same(pending, [0, 0], 'nothing held back after either write')
})
