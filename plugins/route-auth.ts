import fp from 'fastify-plugin'
import type { FastifyInstance, FastifyRequest, onRequestHookHandler, RouteOptions } from 'fastify'
import type { DataCaller } from '../services/collections/access.js'
import { errorResponses } from '../schemas/envelope.js'

type SecurityRequirement = Record<string, string[]>

/**
 * The OpenAPI security schemes, one per credential a client holds. The API's
 * travel as `Authorization: Bearer`, so each says which token it is and what
 * it looks like, for a generated client to tell them apart. Git clients'
 * HTTP Basic has no scheme here: its routes are hidden from the contract.
 */
export const SECURITY_SCHEMES = {
  platformToken: {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'JWT or <PAT_PREFIX>_… personal access token',
    description: 'A platform user\'s credential: the access token of `POST /api/auth/login` (a JWT with claim `type: "platform"`) or a personal access token from `POST /api/auth/api-keys`'
  },
  projectUserToken: {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'JWT',
    description: 'An end user\'s project JWT (claim `type: "project"`) from `POST /api/p/{projectId}/auth/login`; valid only on its own project'
  },
  serviceToken: {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: '<SERVICE_TOKEN_PREFIX>_… service token',
    description: 'A project\'s service token from `POST /api/projects/{projectId}/service-tokens`, for the project\'s own servers'
  }
} as const

type SchemeName = keyof typeof SECURITY_SCHEMES
const requirement = (scheme: SchemeName): SecurityRequirement => ({ [scheme]: [] })

interface AuthKind {
  /** What the route's OpenAPI `security` says: any one requirement satisfies it (`{}` is "no credential"). */
  security: SecurityRequirement[]
  /** The onRequest hook that enforces it; public routes have none. */
  hook?: (app: FastifyInstance) => onRequestHookHandler
  /** Statuses the hook itself answers with, declared on every route of the kind. */
  refusals: number[]
}

/**
 * Every way a route may authenticate its caller. A route names one in
 * `config.auth`; the onRoute hook below attaches the hook and writes the
 * route's `security`, so the contract and the server cannot disagree. A new
 * credential (HTTP Basic for git, a stream's own token) is one more entry.
 */
const AUTH_KINDS = {
  none: { security: [], refusals: [] },
  platform: { security: [requirement('platformToken')], hook: (app) => app.requirePlatformUser, refusals: [401] },
  // Managing credentials needs a signed-in session: a personal access token is refused with 403.
  session: { security: [requirement('platformToken')], hook: (app) => app.requirePlatformSession, refusals: [401, 403] },
  projectUser: { security: [requirement('projectUserToken')], hook: (app) => app.requireProjectUser, refusals: [401, 403, 404] },
  serviceToken: { security: [requirement('serviceToken')], hook: (app) => app.requireServiceToken, refusals: [401] },
  // The data API takes an end user, a platform admin or nobody, and lets each collection method's rule decide.
  data: {
    security: [requirement('projectUserToken'), requirement('platformToken'), {}],
    hook: (app) => (request, _reply, done) => {
      app.dataCaller(request).then((caller) => { request.dataCaller = caller; done() }, done)
    },
    refusals: [401, 404]
  },
  // Git clients: a token as the Basic password (or Bearer), or nobody for public repositories; the route decides per
  // repository. Only the smart-HTTP routes use it, and they are hidden from the contract (git reads no OpenAPI; the
  // README documents them), so it publishes no scheme: an unused one would fail the contract's lint.
  git: { security: [], hook: (app) => app.requireGitCaller, refusals: [401] }
} satisfies Record<string, AuthKind>

export type RouteAuth = keyof typeof AUTH_KINDS
export const ROUTE_AUTH_KINDS = Object.keys(AUTH_KINDS) as RouteAuth[]

declare module 'fastify' {
  interface FastifyContextConfig {
    /** How the route authenticates its caller; required under /api (see plugins/route-auth.ts). */
    auth?: RouteAuth
  }
  interface FastifyRequest {
    dataCaller: DataCaller | null
  }
}

/** The data API's caller, resolved before the handler by `auth: 'data'`. */
export function requestCaller (request: FastifyRequest): DataCaller {
  if (request.dataCaller === null) throw new Error('route is missing auth: \'data\'')
  return request.dataCaller
}

function withRefusals (response: Record<string, unknown>, statuses: number[]): Record<string, unknown> {
  const missing = statuses.filter((status) => response[status] === undefined)
  return missing.length === 0 ? response : { ...response, ...errorResponses(...missing) }
}

function asArray<T> (value: T | T[] | undefined): T[] {
  return value === undefined ? [] : Array.isArray(value) ? value : [value]
}

/**
 * Reads each route's `config.auth` as it is added. A route under /api that
 * declares none stops the app from starting, so none is left open by
 * forgetting; elsewhere (probes, the reference page) no declaration means public.
 */
async function routeAuthPlugin (app: FastifyInstance): Promise<void> {
  app.decorateRequest('dataCaller', null)
  const hooks = new Map<RouteAuth, onRequestHookHandler>()
  for (const name of ROUTE_AUTH_KINDS) {
    const kind: AuthKind = AUTH_KINDS[name]
    if (kind.hook !== undefined) hooks.set(name, kind.hook(app))
  }

  app.addHook('onRoute', (route: RouteOptions) => {
    const declared = route.config?.auth
    const methods = asArray(route.method).join(', ')
    if (declared === undefined && route.url.startsWith('/api')) {
      throw new Error(`${methods} ${route.url}: declare how it authenticates with config.auth (${ROUTE_AUTH_KINDS.join(', ')})`)
    }
    const name = declared ?? 'none'
    const kind: AuthKind | undefined = AUTH_KINDS[name]
    if (kind === undefined) throw new Error(`${methods} ${route.url}: unknown config.auth '${String(name)}'`)
    const hook = hooks.get(name)
    if (hook !== undefined) route.onRequest = [hook, ...asArray(route.onRequest)]
    if (route.schema === undefined || route.schema.hide === true) return
    const response = route.schema.response as Record<string, unknown> | undefined
    route.schema = {
      ...route.schema,
      security: kind.security,
      ...(response === undefined ? {} : { response: withRefusals(response, kind.refusals) })
    }
  })
}

export default fp(routeAuthPlugin, {
  name: 'plinth-route-auth',
  fastify: '5.x',
  dependencies: ['plinth-auth', 'plinth-project-auth', 'plinth-data-caller', 'plinth-git']
})
