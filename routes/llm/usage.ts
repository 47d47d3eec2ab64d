import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import { LlmUsageCallsQuery, LlmUsageQuery, LlmUsageResponses, OrgLlmUsageParams, ProjectLlmUsageParams } from '../../schemas/llm-usage.js'
import type { LlmLevel } from '../../schemas/llm.js'
import { organizationScope, projectScope, type LlmScope } from '../../services/llm/scope.js'
import { monthOf } from '../../services/llm/usage.js'
import { ok } from '../replies.js'

/**
 * `llm-usage`: a month's roll-up of the usage ledger and its calls, the same
 * routes at two levels, mounted under `/api/organizations/:orgId` and under
 * `/api/projects/:projectId` (routes/index.ts).
 */
const llmUsageRoutes: FastifyPluginAsyncTypebox<{ level: LlmLevel }> = async (app, { level }) => {
  const { usage } = app.llm
  const tags = ['llm']
  const Level = level === 'organization' ? 'Organization' : 'Project'
  const where = level === 'organization' ? 'the organization' : 'the project'
  const params = level === 'organization' ? OrgLlmUsageParams : ProjectLlmUsageParams
  const scopeOf = (request: FastifyRequest): LlmScope => level === 'organization'
    ? organizationScope(request.scope.organization.orgId)
    : projectScope(request.scope.project.orgId, request.scope.project.id)

  app.routeDefaults({ auth: 'platform', parent: level })

  app.get('/llm-usage', {
    config: { permission: 'llm.read' },
    schema: {
      operationId: `get${Level}LlmUsage`,
      tags,
      summary: `What ${where}'s model calls used in a month (UTC)`,
      description: 'Tokens in and out and the estimated cost, in total, by model and by user, ' +
        'and each monthly budget in force with what is left of it. `month` is `YYYY-MM`, the current month when left out.',
      params,
      querystring: LlmUsageQuery,
      response: LlmUsageResponses.usage
    }
  }, async (request) => ok(await usage.usage(scopeOf(request), request.query.month)))

  app.get('/llm-usage/calls', {
    config: { permission: 'llm.read' },
    schema: {
      operationId: `list${Level}LlmUsageCalls`,
      tags,
      summary: `${where === 'the project' ? 'The project' : 'The organization'}'s model calls of a month, newest first`,
      description: 'One row per model call: who, which session and run, the model, tokens, estimated cost and latency. ' +
        'Paged with `cursor`.',
      params,
      querystring: LlmUsageCallsQuery,
      response: LlmUsageResponses.calls
    }
  }, async (request) => {
    const { month, ...page } = request.query
    return ok(await usage.calls(scopeOf(request), month ?? monthOf(new Date()), page))
  })
}

export default llmUsageRoutes
