import fp from 'fastify-plugin'
import type { FastifyInstance, FastifyRequest, onRequestHookHandler, preHandlerHookHandler, RouteOptions } from 'fastify'
import type { DeclaredError } from '../services/platform/errors.js'
import type { Permission } from '../services/orgs/catalogue.js'
import { ERROR_STATUSES, errorResponses } from '../schemas/envelope.js'
import { kResolvedCaller, resolvedCaller, setCaller, type RequestCaller } from '../http/caller.js'
import { Scope, type ParentName, type RequestScope } from './permissions.js'

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
  // The deployment's operators (PLATFORM_ADMINS): a platform credential of a listed user, re-checked on each request.
  platformAdmin: { security: [requirement('platformToken')], hook: (app) => app.requirePlatformAdmin, refusals: [401, 403] },
  projectUser: { security: [requirement('projectUserToken')], hook: (app) => app.requireProjectUser, refusals: [401, 403, 404] },
  serviceToken: { security: [requirement('serviceToken')], hook: (app) => app.requireServiceToken, refusals: [401] },
  // The data API takes an end user, a platform admin or nobody, and lets each collection method's rule decide.
  data: {
    security: [requirement('projectUserToken'), requirement('platformToken'), {}],
    hook: (app) => (request, _reply, done) => {
      app.dataCaller(request).then((caller) => { setCaller(request, 'data', caller); done() }, done)
    },
    refusals: [401, 404]
  },
  // Git clients: a token as the Basic password (or Bearer), or nobody for public repositories; the route decides per
  // repository. Only the smart-HTTP routes use it, and they are hidden from the contract (git reads no OpenAPI; the
  // docs/git.md documents them), so it publishes no scheme: an unused one would fail the contract's lint.
  git: { security: [], hook: (app) => app.requireGitCaller, refusals: [401] }
} satisfies Record<string, AuthKind>

export type RouteAuth = keyof typeof AUTH_KINDS
export const ROUTE_AUTH_KINDS = Object.keys(AUTH_KINDS) as RouteAuth[]

/** What a route declares about who may call it and what it may answer; a route folder may set defaults (`app.routeDefaults`). */
export interface RouteDeclaration {
  /** How the route authenticates its caller; required under /api. */
  auth?: RouteAuth
  /** The parent the route acts in, loaded into `request.scope` before the handler (see ParentKinds in plugins/permissions.ts). */
  parent?: ParentName
  /** The permission the caller needs there, checked by the one resolver; needs a `parent`. */
  permission?: Permission
  /** A path parameter naming a platform user: a caller naming themselves there needs no `permission` (see CheckOptions). */
  self?: string
  /** The codes the route's own work may answer, from the families' catalogues; its parents' and permission's are added. */
  errors?: readonly DeclaredError[]
}

declare module 'fastify' {
  interface FastifyContextConfig extends RouteDeclaration {}
  interface FastifyInstance {
    /**
     * Defaults for the routes this plugin (and the plugins it registers)
     * declares: `auth`, `parent` and `permission` a route may override;
     * `errors` are added to each route's own.
     */
    routeDefaults: (defaults: RouteDeclaration) => void
  }
  interface FastifyRequest {
    /** Who is calling, as `config.auth` resolved it. */
    caller: RequestCaller
    /** The parents `config.parent` loaded, typed (`request.scope.project`, `request.scope.zone`). */
    scope: RequestScope
  }
}

/** The one view of the caller, over what the route's credential hook resolved. */
class CallerView implements RequestCaller {
  constructor (private readonly request: FastifyRequest) {}
  get user () { return this.member('user', 'auth \'platform\', \'session\' or \'platformAdmin\'') }
  get endUser () { return this.member('endUser', 'auth \'projectUser\'') }
  get data () { return this.member('data', 'auth \'data\'') }
  get git () { return this.member('git', 'auth \'git\'') }

  private member<K extends keyof RequestCaller> (member: K, kinds: string): RequestCaller[K] {
    const value = resolvedCaller(this.request, member)
    if (value === undefined) throw new Error(`request.caller.${member} is only there on routes with ${kinds}`)
    return value
  }
}

const kDefaults = Symbol('plinth.routeDefaults')
const kScope = Symbol('plinth.scope')
const NO_PARENT = new Scope() as RequestScope

function asArray<T> (value: T | T[] | undefined): T[] {
  return value === undefined ? [] : Array.isArray(value) ? value : [value]
}

/** Each code once, by status then code, so the contract reads the same on every run. */
function distinct (errors: readonly DeclaredError[]): DeclaredError[] {
  const byCode = new Map(errors.map((error) => [error.code, error]))
  return [...byCode.values()].sort((a, b) => a.status - b.status || a.code.localeCompare(b.code))
}

/** The statuses the contract lists for a route: its credential's refusals and its codes' (a 500 is the default answer's). */
function withRefusals (response: Record<string, unknown>, statuses: number[]): Record<string, unknown> {
  const missing = [...new Set(statuses)].filter((status) => response[status] === undefined && status !== 500 && ERROR_STATUSES[status] !== undefined)
  return missing.length === 0 ? response : { ...response, ...errorResponses(...missing) }
}

/** "Needs `x`.", the route's own words, and the codes it may answer with what each means. */
function describe (own: string | undefined, needs: string, errors: DeclaredError[]): string {
  const text = [needs, own ?? ''].filter((part) => part !== '').join(' ')
  if (errors.length === 0) return text
  const refusals = errors.map((error) => `- ${error.status} \`${error.code}\`: ${error.description}`).join('\n')
  return `${text === '' ? '' : `${text}\n\n`}Refused with:\n${refusals}`
}

/**
 * Reads each route's declaration as it is added: `auth` becomes the onRequest
 * hook and the OpenAPI `security`; `parent` and `permission` the preHandler
 * that loads `request.scope` through the one resolver, and the description's
 * "Needs" sentence; `errors`, with the parent's and the permission's, the 4xx
 * responses and the "Refused with" list. A route under /api that declares no
 * `auth` stops the app from starting, so none is left open by forgetting;
 * elsewhere (probes, the reference page) no declaration means public.
 */
async function routeAuthPlugin (app: FastifyInstance): Promise<void> {
  app.decorateRequest(kResolvedCaller as unknown as string, null)
  app.decorateRequest('caller', { getter (this: FastifyRequest) { return new CallerView(this) } })
  app.decorateRequest(kScope as unknown as string, null)
  app.decorateRequest('scope', { getter (this: FastifyRequest) { return (this as unknown as Record<symbol, RequestScope | null>)[kScope] ?? NO_PARENT } })
  app.decorate('routeDefaults', function (this: FastifyInstance, defaults: RouteDeclaration) {
    const inherited = (this as unknown as Record<symbol, RouteDeclaration | undefined>)[kDefaults] ?? {}
    ;(this as unknown as Record<symbol, RouteDeclaration>)[kDefaults] = { ...inherited, ...defaults, errors: [...inherited.errors ?? [], ...defaults.errors ?? []] }
  })
  const hooks = new Map<RouteAuth, onRequestHookHandler>()
  for (const name of ROUTE_AUTH_KINDS) {
    const kind: AuthKind = AUTH_KINDS[name]
    if (kind.hook !== undefined) hooks.set(name, kind.hook(app))
  }

  app.addHook('onRoute', function (this: FastifyInstance, route: RouteOptions) {
    const defaults = (this as unknown as Record<symbol, RouteDeclaration | undefined>)[kDefaults] ?? {}
    const config: RouteDeclaration = { ...defaults, ...route.config, errors: [...defaults.errors ?? [], ...route.config?.errors ?? []] }
    const where = `${asArray(route.method).join(', ')} ${route.url}`
    if (config.auth === undefined && route.url.startsWith('/api')) {
      throw new Error(`${where}: declare how it authenticates with config.auth (${ROUTE_AUTH_KINDS.join(', ')})`)
    }
    const name = config.auth ?? 'none'
    const kind: AuthKind | undefined = AUTH_KINDS[name]
    if (kind === undefined) throw new Error(`${where}: unknown config.auth '${String(name)}'`)
    if (config.permission !== undefined && config.parent === undefined) throw new Error(`${where}: config.permission needs config.parent, the parent it is held in`)
    if (config.self !== undefined && !route.url.split('/').includes(`:${config.self}`)) throw new Error(`${where}: config.self names :${config.self}, which is not in the path`)
    route.config = { ...route.config, ...config }
    const hook = hooks.get(name)
    if (hook !== undefined) route.onRequest = [hook, ...asArray(route.onRequest)]
    const check = config.parent === undefined ? undefined : app.parentCheck(config.parent, config.permission, { self: config.self })
    if (check !== undefined) {
      const loadScope: preHandlerHookHandler = (request, _reply, done) => {
        check.resolve(request, request.caller).then((scope) => {
          (request as unknown as Record<symbol, RequestScope>)[kScope] = scope
          done()
        }, done)
      }
      route.preHandler = [loadScope, ...asArray(route.preHandler)]
    }
    if (route.schema === undefined || route.schema.hide === true) return
    const errors = distinct([...config.errors ?? [], ...check?.errors ?? []])
    const declared = errors.length > 0 || check !== undefined
    const own = route.schema.description
    if (declared && own !== undefined && /^Needs\b/.test(own)) throw new Error(`${where}: the "Needs" sentence is written from config.permission, not by hand`)
    if (declared && own?.includes('`APP_') === true) throw new Error(`${where}: name no codes in the description; config.errors lists them`)
    const response = route.schema.response as Record<string, unknown> | undefined
    route.schema = {
      ...route.schema,
      security: kind.security,
      ...(declared ? { description: describe(own, check?.needs ?? '', errors) } : {}),
      ...(response === undefined ? {} : { response: withRefusals(response, [...kind.refusals, ...errors.map((error) => error.status)]) })
    }
  })
}

export default fp(routeAuthPlugin, {
  name: 'plinth-route-auth',
  fastify: '5.x',
  dependencies: ['plinth-auth', 'plinth-permissions', 'plinth-project-auth', 'plinth-data-caller', 'plinth-git']
})
