import { existsSync } from 'node:fs'
import { basename, dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import fp from 'fastify-plugin'
import fastifyStatic from '@fastify/static'
import type { FastifyInstance } from 'fastify'
import { consoleErrors } from '../services/console/errors.js'
import { commonErrors } from '../services/platform/errors.js'

/**
 * Where `vite build` writes the console (console/dist at the repository's
 * root), found from this file whether it runs from source or from dist/.
 */
export function defaultConsoleDir (): string {
  const here = dirname(fileURLToPath(import.meta.url))
  const root = basename(dirname(here)) === 'dist' ? dirname(dirname(here)) : dirname(here)
  return join(root, 'console', 'dist')
}

export interface ConsoleOptions {
  /** The console's build output; defaultConsoleDir() unless a test points elsewhere. */
  dir?: string
}

/**
 * The web console: a single-page app served at /console from its build
 * output, every unknown path under it answered with index.html so the app's
 * own router takes it. It reaches the API only through the SDK, on this same
 * origin, so it can do nothing the API refuses. Without a build, /console
 * answers 503 APP_CONSOLE_NOT_BUILT in the envelope.
 */
async function consolePlugin (app: FastifyInstance, options: ConsoleOptions): Promise<void> {
  const dir = options.dir ?? defaultConsoleDir()
  if (!existsSync(join(dir, 'index.html'))) {
    const notBuilt = async () => { throw consoleErrors.notBuilt() }
    app.get('/console', { schema: { hide: true } }, notBuilt)
    app.get('/console/*', { schema: { hide: true } }, notBuilt)
    return
  }
  await app.register(async (scope) => {
    await scope.register(fastifyStatic, {
      root: dir,
      prefix: '/console/',
      wildcard: false,
      index: false,
      // Hashed assets never change under one name; index.html must be re-read to see a new build.
      setHeaders: (res, path) => {
        res.setHeader('cache-control', path.includes(`${join(dir, 'assets')}`) ? 'public, max-age=31536000, immutable' : 'no-cache')
      }
    })
    const shell = async (_request: unknown, reply: { sendFile: (name: string) => unknown }) => await reply.sendFile('index.html')
    scope.get('/console', { schema: { hide: true } }, shell)
    scope.get('/console/*', { schema: { hide: true } }, async (request, reply) => {
      // A missing asset is a 404, not the app's page: a stale cached shell must not get HTML for its script.
      if (request.url.startsWith('/console/assets/')) throw commonErrors.routeNotFound({ method: request.method, path: request.url.split('?')[0] })
      return await reply.sendFile('index.html')
    })
  })
}

export default fp(consolePlugin, { name: 'plinth-console', fastify: '5.x', dependencies: ['plinth-errors'] })
