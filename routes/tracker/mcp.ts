import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import { PlatformTrackerParams } from '../../schemas/tracker-routes.js'
import { commonErrors } from '../../services/platform/errors.js'
import { mcpServer } from '../../services/tools/mcp.js'
import { toErrorReply } from '../../plugins/errors.js'

// The platform's one tool server: every family's tools (tracker, collections, git, DNS, hosting), not the tracker's alone.
const SERVER_INFO = { name: 'plinth', version: '1.0.0' }
// JSON-RPC's "server error" range: the platform's refusal before any MCP message was read (its code in `data`).
const REFUSED = -32001

/**
 * `…/tracker/mcp`: the project's tools (every family's, `app.tools.project`) over MCP's Streamable HTTP, stateless
 * (each POST carries its own bearer credential and gets its own server and
 * transport, so access is read afresh for every message). The SDK reads the
 * body itself; refusals before it runs (a bad token, an unknown project)
 * answer as JSON-RPC errors with the HTTP status and a Bearer challenge.
 */
const mcpRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('*', (_request, payload, done) => { done(null, payload) })
  app.setErrorHandler((error: Error, request, reply) => {
    const { status, body, internal } = toErrorReply(error)
    if (internal) request.log.error({ err: error }, 'MCP request failed')
    if (status === 401) void reply.header('www-authenticate', 'Bearer realm="Plinth"')
    return reply.code(status).send({ jsonrpc: '2.0', error: { code: REFUSED, message: body.message, data: body }, id: null })
  })
  const config = { auth: 'platform', parent: 'project', permission: 'tracker.read' } as const
  const schema = { hide: true, params: PlatformTrackerParams }

  app.post('', { config, schema }, async (request, reply) => {
    const { user } = request.caller
    const origin = { channel: 'mcp' as const, credential: user.via === 'pat' ? 'pat' as const : 'session' as const, address: request.ip }
    const caller = { userId: user.userId, scopes: user.scopes, projectId: request.scope.project.id, origin }
    const server = mcpServer(app.tools.project, caller, SERVER_INFO)
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true })
    reply.raw.once('close', () => { void transport.close(); void server.close() })
    await server.connect(transport)
    reply.hijack()
    await transport.handleRequest(request.raw, reply.raw)
  })

  // Stateless: no server-initiated stream to open, no session to end.
  const notAllowed = async (request: FastifyRequest, reply: FastifyReply): Promise<never> => {
    void reply.header('allow', 'POST')
    throw commonErrors.methodNotAllowed({ method: request.method, path: request.url.split('?')[0], allowed: ['POST'] })
  }
  app.get('', { config, schema }, notAllowed)
  app.delete('', { config, schema }, notAllowed)
}

export default mcpRoutes
