import { chmodSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { buildApp } from '../app.js'
import { loadConfig } from '../services/config.js'

/**
 * The real app with hosting on (the process driver, the gateway on a free
 * port) on a temp DATA_DIR, and a user who owns an organization: the bench
 * makes the project, the app and its deployments through the REST API.
 */
const dataDir = mkdtempSync(join(tmpdir(), 'plinth-bench-deploy-'))
// As a server's data directory would be: searchable by the sandbox user, so instances run as nobody, not degraded.
chmodSync(dataDir, 0o711)
const app = await buildApp(loadConfig({ ...process.env, DATA_DIR: dataDir, LOG_LEVEL: 'silent', HOSTING_ENABLED: 'true', HOSTING_DRIVER: 'process', GATEWAY_PORT: '0' }))
// A closing server leaves its instances running for the next start to adopt; the bench's must not outlive it.
app.addHook('preClose', async () => {
  for (const instance of await app.hosting.releases.running()) await app.hosting.releases.stop(instance, 'the bench ended')
})
process.once('SIGTERM', () => {
  void app.close().finally(() => {
    rmSync(dataDir, { recursive: true, force: true })
    process.exit(0)
  })
})
const address = await app.listen({ port: 0, host: '127.0.0.1' })
const user = await app.identity.users.register({ email: 'bench@example.com', password: 'bench password 1', name: 'Bench' })
const { accessToken } = await app.identity.sessions.start(user.id)
const org = await app.orgs.organizations.create({ userId: user.id }, { name: 'Bench' })
process.send?.({
  address,
  accessToken,
  orgId: org.id,
  gatewayPort: String(app.hosting.gatewayPort()),
  appsDomain: app.config.hosting.appsDomain,
  degradedReason: app.hosting.driver.degradedReason ?? ''
})
