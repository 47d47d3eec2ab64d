import { benchOwner, startBenchApp } from './bench-app.js'

/**
 * The real app with hosting on (the process driver, the gateway on a free
 * port) on a temp DATA_DIR, and a user who owns an organization: the bench
 * makes the project, the app and its deployments through the REST API.
 */
// The data directory as a server's would be: searchable by the sandbox user, so instances run as nobody, not degraded.
const { app } = await startBenchApp({ HOSTING_ENABLED: 'true', HOSTING_DRIVER: 'process', GATEWAY_PORT: '0' }, { mode: 0o711 })
// A closing server leaves its instances running for the next start to adopt; the bench's must not outlive it.
app.addHook('preClose', async () => {
  for (const instance of await app.hosting.releases.running()) await app.hosting.releases.stop(instance, 'the bench ended')
})
const address = await app.listen({ port: 0, host: '127.0.0.1' })
const { accessToken, orgId } = await benchOwner(app)
process.send?.({
  address,
  accessToken,
  orgId,
  gatewayPort: String(app.hosting.gatewayPort()),
  appsDomain: app.config.hosting.appsDomain,
  degradedReason: app.hosting.driver.degradedReason ?? ''
})
