import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import { COLLECTION_TOOLS } from '../services/tools/collection-tools.js'
import { DNS_TOOLS, GIT_TOOLS, HOSTING_TOOLS } from '../services/tools/infrastructure-tools.js'
import { MERGE_REQUEST_TOOLS } from '../services/tools/merge-request-tools.js'
import { projectToolContext, type ProjectToolContext } from '../services/tools/project-tool-context.js'
import { ToolRegistry, type ToolAccessPort } from '../services/tools/registry.js'
import { addTrackerTools } from '../services/tools/tracker-tools.js'

export interface ToolRegistries {
  /** Every family's operations a platform user may call in a project as tools, for the MCP server at `…/tracker/mcp` and the assistant. */
  project: ToolRegistry<ProjectToolContext>
}

declare module 'fastify' {
  interface FastifyInstance {
    tools: ToolRegistries
  }
}

/**
 * The one registry of the operations tools may call. A call's access is
 * read through the one resolver at that call, with a PAT's scopes, never
 * kept from when a session or a connection began. A family switched off
 * (git or hosting) offers no tools, as its routes answer none.
 */
async function toolsPlugin (app: FastifyInstance): Promise<void> {
  const access: ToolAccessPort = async (caller) => {
    const project = await app.projects.findById(caller.projectId)
    const found = project === null ? null : await app.orgs.resolver.access(project.orgId, { userId: caller.userId, scopes: caller.scopes }, project.id)
    return found === null ? null : { permissions: found.permissions, scopes: caller.scopes }
  }
  const context = projectToolContext({ tracker: app.tracker, collections: { definitions: app.collections.definitions, records: app.records }, git: app.git, gitMergeRequests: app.gitMergeRequests, dns: app.dns, hosting: app.hosting })
  const project = new ToolRegistry<ProjectToolContext>({ access, context })
  addTrackerTools(project)
  for (const tool of [...COLLECTION_TOOLS, ...DNS_TOOLS, ...(app.git.enabled ? [...GIT_TOOLS, ...MERGE_REQUEST_TOOLS] : []), ...(app.hosting.enabled ? HOSTING_TOOLS : [])]) project.add(tool)
  app.decorate('tools', { project })
}

export default fp(toolsPlugin, {
  name: 'plinth-tools',
  fastify: '5.x',
  dependencies: ['plinth-projects', 'plinth-orgs', 'plinth-tracker', 'plinth-collections', 'plinth-records', 'plinth-git', 'plinth-git-merge-requests', 'plinth-dns', 'plinth-hosting']
})
