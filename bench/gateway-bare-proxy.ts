import { once } from 'node:events'
import { Agent, createServer, request } from 'node:http'
import type { AddressInfo } from 'node:net'

/**
 * A reference, not a bar: the least a node:http reverse proxy does (one
 * upstream, the client's headers passed as they are, the answer piped back
 * over kept-alive connections), with no routing, header rules, ids, retries
 * or metrics. What the gateway costs beyond it is the gateway's own work.
 */
const [{ port }] = await once(process, 'message') as [{ port: number }]
const agent = new Agent({ keepAlive: true, maxFreeSockets: 1024 })
const server = createServer((req, res) => {
  const upstream = request({ host: '127.0.0.1', port, method: req.method, path: req.url, headers: req.rawHeaders, agent }, (answer) => {
    res.writeHead(answer.statusCode as number, answer.rawHeaders)
    answer.pipe(res)
  })
  upstream.on('error', () => res.destroy())
  upstream.end()
})
server.listen(0, '127.0.0.1', () => { process.send?.({ port: (server.address() as AddressInfo).port }) })
process.once('SIGTERM', () => { server.close(() => process.exit(0)) })
