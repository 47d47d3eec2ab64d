import fp from 'fastify-plugin'
import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify'
import { commonErrors } from '../services/platform/errors.js'
import { ANY_ORIGIN } from '../services/platform/origins.js'

const ALLOW_METHODS = 'GET, HEAD, POST, PUT, PATCH, DELETE'
const ALLOW_HEADERS = 'authorization, content-type, if-match, if-none-match, range'
/** Beyond the CORS-safelisted ones, what a browser app reads: versions, byte ranges, download names, when to retry. */
const EXPOSE_HEADERS = 'etag, content-range, content-disposition, accept-ranges, retry-after'
/** Browsers cap this themselves (Chromium at 2 h); ten minutes bounds how long a removed origin keeps its preflight. */
const MAX_AGE_SECONDS = '600'
// Project ids are [0-9A-Za-z_-]; anything else under /api/p/ belongs to no project and is refused.
const PROJECT_PATH = /^\/api\/p\/([0-9A-Za-z_-]{1,64})(?:[/?]|$)/

/** What an origin gets from a list of allowed origins: its own name with credentials, the wildcard without, or nothing. */
type Grant = 'origin' | 'any' | null

function grantFor (allowed: readonly string[], origin: string): Grant {
  if (allowed.length === 0) return null
  if (allowed[0] === ANY_ORIGIN) return 'any'
  return allowed.includes(origin) ? 'origin' : null
}

function allowOrigin (reply: FastifyReply, origin: string, grant: 'origin' | 'any'): void {
  if (grant === 'any') {
    void reply.header('access-control-allow-origin', '*')
    return
  }
  void reply.header('access-control-allow-origin', origin)
  void reply.header('access-control-allow-credentials', 'true')
}

/**
 * CORS for browser apps. The platform API (`/api/auth`, `/api/projects`, …)
 * answers the origins of CORS_ORIGINS; a project's data API
 * (`/api/p/:projectId/…`) answers the origins set on that project, read
 * through the same memoized lookup the data routes make. A refused origin
 * gets no CORS header at all, and its preflight a 403 in the envelope.
 * Every `/api` answer varies by Origin, so a shared cache never hands one
 * origin's answer to another.
 */
async function corsPlugin (app: FastifyInstance): Promise<void> {
  const platformOrigins = app.config.corsOrigins
  const { projects } = app

  const decide = (request: FastifyRequest, reply: FastifyReply, origin: string, grant: Grant, done: HookHandlerDoneFunction): void => {
    const preflight = request.method === 'OPTIONS' && request.headers['access-control-request-method'] !== undefined
    if (grant === null) {
      if (preflight) { done(commonErrors.corsOriginRefused({ origin })); return }
      done()
      return
    }
    allowOrigin(reply, origin, grant)
    if (!preflight) {
      void reply.header('access-control-expose-headers', EXPOSE_HEADERS)
      done()
      return
    }
    void reply.code(204).headers({
      'access-control-allow-methods': ALLOW_METHODS,
      'access-control-allow-headers': ALLOW_HEADERS,
      'access-control-max-age': MAX_AGE_SECONDS
    }).send()
  }

  // A callback hook, not an async one: the common request (no Origin, as from servers and tools) costs no promise.
  app.addHook('onRequest', (request, reply, done) => {
    if (!request.url.startsWith('/api/')) { done(); return }
    void reply.header('vary', 'Origin')
    const origin = request.headers.origin
    if (origin === undefined) { done(); return }
    if (!request.url.startsWith('/api/p/')) { decide(request, reply, origin, grantFor(platformOrigins, origin), done); return }
    const projectId = PROJECT_PATH.exec(request.url)?.[1]
    if (projectId === undefined) { decide(request, reply, origin, null, done); return }
    projects.findById(projectId).then(
      (project) => { decide(request, reply, origin, project === null ? null : grantFor(project.allowedOrigins, origin), done) },
      (error: Error) => { done(error) }
    )
  })
}

export default fp(corsPlugin, { name: 'plinth-cors', fastify: '5.x', dependencies: ['plinth-config', 'plinth-projects'] })
