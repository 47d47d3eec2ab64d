import { buildApp } from './app.js'
import { loadConfig, type Config } from './services/config.js'
import { keepListening, readDescriptorLimit, surviveDescriptorShortage } from './services/platform/descriptors.js'
import { startupFailure } from './services/platform/startup-failure.js'
import { followerOrNot, reportReady, runPrimary } from './services/platform/cluster.js'
import cluster from 'node:cluster'
import type { AddressInfo } from 'node:net'

const DRAIN_TIMEOUT_MS = 10_000

// Kept for the start-up failure message, which names the variable that chose a taken port.
let loaded: Config | null = null

async function main (): Promise<void> {
  const config = followerOrNot(loadConfig())
  loaded = config
  if (cluster.isPrimary && config.workers > 1) {
    runPrimary(config.workers, DRAIN_TIMEOUT_MS + (config.hosting.stopAppsOnExit ? config.hosting.stopGraceMs : 0))
    return
  }
  const app = await buildApp(config)
  // Node raised the soft limit to the hard one as it started; the gateway fitted its connection limits into it.
  app.log.info({ ...readDescriptorLimit() }, 'open file limit (RLIMIT_NOFILE)')
  surviveDescriptorShortage(app.log)
  let closing = false
  const shutdown = (signal: string): void => {
    if (closing) return
    closing = true
    app.log.info({ signal }, 'draining in-flight requests')
    // Stopping hosted apps on exit waits out their stop grace (SIGTERM, then SIGKILL) on top of the drain.
    const stopping = config.hosting.enabled && config.hosting.stopAppsOnExit ? config.hosting.stopGraceMs : 0
    const force = setTimeout(() => {
      app.log.error('drain timed out; exiting')
      process.exit(1)
    }, DRAIN_TIMEOUT_MS + stopping)
    force.unref()
    app.close().then(() => process.exit(0), (error: unknown) => {
      app.log.error({ err: error }, 'error while closing')
      process.exit(1)
    })
  }
  process.on('SIGTERM', () => shutdown('SIGTERM'))
  process.on('SIGINT', () => shutdown('SIGINT'))

  await app.listen({ port: config.port, host: config.host })
  keepListening(app.server, 'api', (details, message) => { app.log.warn(details, message) })
  reportReady((app.server.address() as AddressInfo).port)
}

main().catch((error: unknown) => {
  // A bad variable, a database that does not answer, a port taken: one line naming the variable, no stack trace.
  const failure = startupFailure(error, loaded)
  if (failure !== null) {
    console.error(failure.line)
    process.exit(failure.exitCode)
  }
  console.error(error)
  process.exit(1)
})
