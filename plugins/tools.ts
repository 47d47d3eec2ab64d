import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import { ToolRegistry, type ToolAccessPort } from '../services/tools/registry.js'
import { addTrackerTools } from '../services/tools/tracker-tools.js'
import { trackerToolContext, type TrackerToolContext } from '../services/tools/tracker-tool-context.js'

export interface ToolRegistries {
  /** The tracker's operations, for the MCP server at `…/tracker/mcp` and the assistant. */
  tracker: ToolRegistry<TrackerToolContext>
}

declare module 'fastify' {
  interface FastifyInstance {
    tools: ToolRegistries
  }
}

/**
 * The one registry of the operations tools may call, per family. A call's
 * access is read through the one resolver at that call, with a PAT's scopes,
 * never kept from when a session or a connection began.
 */
async function toolsPlugin (app: FastifyInstance): Promise<void> {
  const access: ToolAccessPort = async (caller) => {
    const project = await app.projects.findById(caller.projectId)
    const found = project === null ? null : await app.orgs.resolver.access(project.orgId, { userId: caller.userId, scopes: caller.scopes }, project.id)
    return found === null ? null : { permissions: found.permissions, scopes: caller.scopes }
  }
  const tracker = new ToolRegistry<TrackerToolContext>({ access, context: trackerToolContext(app.tracker) })
  addTrackerTools(tracker)
  app.decorate('tools', { tracker })
}

export default fp(toolsPlugin, { name: 'plinth-tools', fastify: '5.x', dependencies: ['plinth-projects', 'plinth-orgs', 'plinth-tracker'] })
