import { buildApp } from './app.js'
import { loadConfig, type Config } from './services/config.js'
import { startupFailure } from './services/startup-failure.js'

const DRAIN_TIMEOUT_MS = 10_000

let config: Config | null = null

async function main (): Promise<void> {
  config = loadConfig()
  const app = await buildApp(config)
  let closing = false
  const shutdown = (signal: string): void => {
    if (closing) return
    closing = true
    app.log.info({ signal }, 'draining in-flight requests')
    const force = setTimeout(() => {
      app.log.error('drain timed out; exiting')
      process.exit(1)
    }, DRAIN_TIMEOUT_MS)
    force.unref()
    app.close().then(() => process.exit(0), (error: unknown) => {
      app.log.error({ err: error }, 'error while closing')
      process.exit(1)
    })
  }
  process.on('SIGTERM', () => shutdown('SIGTERM'))
  process.on('SIGINT', () => shutdown('SIGINT'))

  await app.listen({ port: config.port, host: config.host })
}

main().catch((error: unknown) => {
  // A bad variable, a database that does not answer, a port taken: one line naming the variable, no stack trace.
  const failure = startupFailure(error, config)
  if (failure !== null) {
    console.error(failure.line)
    process.exit(failure.exitCode)
  }
  console.error(error)
  process.exit(1)
})
