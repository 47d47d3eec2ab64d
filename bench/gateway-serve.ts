import { once } from 'node:events'
import { Gateway } from '../services/hosting/gateway/gateway.js'
import type { Route } from '../services/hosting/routing.js'
import { newId } from '../services/platform/ids.js'

/** The gateway alone, in a process of its own, routing the bench host to the hello-world app at the address it is given. */
const [{ port, host }] = await once(process, 'message') as [{ port: number, host?: string }]
const route: Route = { kind: 'app', appId: 'bench', projectId: 'bench', suspended: false, upstreams: [{ instanceId: 'hello', host: host ?? '127.0.0.1', port }] }
let served = 0
const gateway = new Gateway({
  routes: { resolve: (host) => host === 'hello.bench' ? route : null },
  served: { record: () => { served++ } },
  certificates: { certificateFor: () => null },
  challenges: { keyAuthorization: () => null },
  newId
})
await gateway.listen({ port: 0, host: '127.0.0.1' })
process.send?.({ port: gateway.addresses().http?.port })
process.once('SIGTERM', () => {
  void gateway.close().finally(() => {
    if (served === 0) console.error('the gateway recorded no request')
    process.exit(0)
  })
})
