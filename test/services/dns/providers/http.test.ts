import t from 'tap'
import { createServer } from 'node:http'
import { callProvider } from '../../../../services/dns/providers/http.js'
import { AddressGuard } from '../../../../services/outbound/internal-addresses.js'

t.test('a provider answer is read up to a bound, then refused as a failure', async (t) => {
  const megabyte = Buffer.alloc(1024 * 1024, 'x')
  const server = createServer((request, response) => {
    const megabytes = request.url === '/huge' ? 17 : 1
    response.writeHead(200, { 'content-type': 'application/json' })
    let sent = 0
    const more = (): void => {
      while (sent < megabytes) {
        sent++
        if (!response.write(megabyte)) { response.once('drain', more); return }
      }
      response.end()
    }
    more()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => { server.closeAllConnections(); server.close() })
  const { port } = server.address() as { port: number }
  const small = await callProvider(new AddressGuard({ allowedHosts: ['127.0.0.1'] }), 'Test', `http://127.0.0.1:${port}/small`, { method: 'GET', headers: {} })
  t.equal(small.text.length, 1024 * 1024)
  await t.rejects(callProvider(new AddressGuard({ allowedHosts: ['127.0.0.1'] }), 'Test', `http://127.0.0.1:${port}/huge`, { method: 'GET', headers: {} }), { status: 502, code: 'APP_DNS_PROVIDER_FAILED', message: 'Test answered more than 16 MB' })
})
