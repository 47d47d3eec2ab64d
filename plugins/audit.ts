import fp from 'fastify-plugin'
import { resolvedCaller } from '../http/caller.js'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { AUDIT_PRUNE_JOB, AuditLog, type AuditCredential } from '../services/audit/log.js'
import { Cursors } from '../services/collections/query.js'
import { systemClock } from '../services/platform/clock.js'
import { newId } from '../services/platform/ids.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** false: the route's writes are content with a history of their own (a tracker item's activity), not setup; no entry. */
    audited?: boolean
  }
  interface FastifyInstance {
    /** Who changed what (docs/audit.md). */
    audit: AuditLog
  }
}

const WRITES = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])
/** Tool calls are audited one by one as they change something (below), not as the messages that carry them. */
const MCP_ROUTE = '/api/projects/:projectId/tracker/mcp'
const ASSISTANT_ROUTE = '/api/projects/:projectId/assistant/sessions/:sessionId/messages'
/** Routes that sign a platform user in: no credential arrives, the answer names the user. */
const SIGN_INS: Record<string, AuditCredential> = { '/api/auth/login': 'password', '/api/auth/oauth/exchange': 'sso' }
/** Writes that change nothing worth an entry (a session's own turnover), and records, which are the data, not its setup. */
const NOT_AUDITED = ['/api/auth/refresh', '/api/auth/logout', '/api/auth/register', MCP_ROUTE]
const DATA_PREFIX = '/api/p/'
const DAY_MS = 24 * 60 * 60_000

/** `data.id` (or `data.project.id`, an imported project) and `data.user.id` of a JSON answer, when it is one; the answer is never stored. */
function answered (payload: unknown): { id?: unknown, userId?: unknown } {
  if (typeof payload !== 'string' || !payload.startsWith('{')) return {}
  try {
    const data = (JSON.parse(payload) as { data?: { id?: unknown, user?: { id?: unknown }, project?: { id?: unknown } } }).data
    return { id: data?.id ?? data?.project?.id, userId: data?.user?.id }
  } catch {
    return {}
  }
}

async function whereIn (app: FastifyInstance, request: FastifyRequest, params: Record<string, string>, created: unknown): Promise<{ orgId: string | null, projectId: string | null }> {
  const scope = request.scope
  if (scope.has('project')) return { orgId: scope.project.orgId, projectId: scope.project.id }
  if (scope.has('organization')) return { orgId: scope.organization.orgId, projectId: scope.organization.projectId }
  // Parents that decide access themselves (a git repository) load no project: the path still names it, and the
  // change belongs to that project's organization, not to the actor's own account.
  if (params.projectId !== undefined) {
    const project = await app.projects.findById(params.projectId)
    if (project !== null) return { orgId: project.orgId, projectId: project.id }
  }
  if (params.orgId !== undefined) return { orgId: params.orgId, projectId: null }
  // Creating an organization: the answer names it.
  if (request.routeOptions.url === '/api/organizations' && typeof created === 'string') return { orgId: created, projectId: null }
  return { orgId: null, projectId: null }
}

/**
 * The audit log's one write point: every change a platform user or PAT makes
 * through the API (and every sign-in) is appended after the route has done it
 * and before the answer leaves, so an acknowledged change always has its
 * entry; when the append fails the caller gets a 500 rather than a success
 * nobody recorded. Entries name fields, never their values.
 */
async function auditPlugin (app: FastifyInstance): Promise<void> {
  const log = new AuditLog(app.store, { clock: systemClock, newId, cursors: new Cursors(app.deriveSecretKey('audit:cursor')) })
  await log.init()
  app.decorate('audit', log)

  app.addHook('onSend', async (request: FastifyRequest, reply: FastifyReply, payload: unknown) => {
    const route = request.routeOptions.url
    if (route === undefined || !WRITES.has(request.method) || reply.statusCode >= 300 || request.routeOptions.config.audited === false) return payload
    if (!route.startsWith('/api/') || route.startsWith(DATA_PREFIX) || NOT_AUDITED.includes(route)) return payload
    const auth = resolvedCaller(request, 'user') ?? null
    const signIn = SIGN_INS[route]
    if (auth === null && signIn === undefined) return payload
    const created = answered(payload)
    const actorId = auth?.userId ?? created.userId
    if (typeof actorId !== 'string') return payload
    // A route may coerce a path parameter to a number (an upload's chunk index): the log keeps the text of the path.
    const params = Object.fromEntries(Object.entries((request.params ?? {}) as Record<string, unknown>).map(([name, value]) => [name, String(value)]))
    const names = Object.values(params)
    const body = request.body
    await log.append({
      ...await whereIn(app, request, params, created.id),
      actorId,
      credential: auth === null ? signIn : auth.via === 'pat' ? 'pat' : 'session',
      address: request.ip,
      action: request.routeOptions.schema?.operationId ?? `${request.method} ${route}`,
      method: request.method,
      route,
      targetId: reply.statusCode === 201 && typeof created.id === 'string' ? created.id : names.length > 0 ? names[names.length - 1] : actorId,
      params,
      fields: body !== null && typeof body === 'object' && !Array.isArray(body) ? Object.keys(body).sort() : [],
      status: reply.statusCode
    })
    return payload
  })

  // A tool that changed something, through MCP or an assistant run, is the caller's change: the same entry a route
  // would make, its action the tool's name. An assistant's call is made for whoever posted the run's message.
  app.tools.project.onChange(async ({ tool, caller, fields, result }) => {
    const project = await app.projects.findById(caller.projectId)
    const madeId = (result as { id?: unknown } | null)?.id
    await log.append({
      orgId: project?.orgId ?? null,
      projectId: caller.projectId,
      actorId: caller.userId,
      credential: caller.origin?.credential ?? 'session',
      address: caller.origin?.address ?? '',
      action: `tool:${tool}`,
      method: 'TOOL',
      route: caller.origin?.channel === 'assistant' ? ASSISTANT_ROUTE : MCP_ROUTE,
      targetId: typeof madeId === 'string' ? madeId : caller.projectId,
      params: { projectId: caller.projectId },
      fields,
      status: 200
    })
  })

  app.registerJobHandler(AUDIT_PRUNE_JOB, async () => ({ pruned: await log.prune(app.config.audit.retentionDays) }))
  app.addHook('onReady', async () => { await app.jobs.schedule(AUDIT_PRUNE_JOB, DAY_MS) })
}

export default fp(auditPlugin, { name: 'plinth-audit', fastify: '5.x', dependencies: ['plinth-config', 'plinth-store', 'plinth-secrets', 'plinth-jobs', 'plinth-projects', 'plinth-route-auth', 'plinth-tools'] })
