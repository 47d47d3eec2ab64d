import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'

/** The app behind the gateway: a plain node:http hello-world, the same code asked directly and through the gateway. */
const body = Buffer.from('hello world\n')
const server = createServer((req, res) => {
  res.writeHead(200, { 'content-type': 'text/plain', 'content-length': body.length })
  res.end(body)
})
// In a network namespace of its own (the bench's namespaced row) it is told where to listen, as an instance is.
server.listen(Number(process.env.PORT ?? 0), process.env.HOST ?? '127.0.0.1', () => { process.send?.({ port: (server.address() as AddressInfo).port }) })
process.once('SIGTERM', () => { server.close(() => process.exit(0)) })
