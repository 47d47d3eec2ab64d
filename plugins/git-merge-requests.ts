import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import { systemClock } from '../services/clock.js'
import { newId } from '../services/ids.js'
import { mergeRequestSchemas } from '../schemas/git-merge-requests.js'
import { GitCli } from '../services/git/git-cli.js'
import { mergeRequestFamily, type MergeRequestFamily } from '../services/git/merge-request-family.js'

declare module 'fastify' {
  interface FastifyInstance {
    gitMergeRequests: MergeRequestFamily
  }
}

/**
 * Merge requests, reviews and merging on top of git hosting. It joins the
 * git plugin's hook lists (a repository deleted, a push received) rather
 * than the other way round, so plinth-git knows nothing of merge requests.
 */
async function gitMergeRequestsPlugin (app: FastifyInstance): Promise<void> {
  const { repositories, protection, labels, transport, access, reader } = app.git
  const family = await mergeRequestFamily(app.store, {
    clock: systemClock,
    newId,
    git: new GitCli(),
    reader,
    repositories,
    protection,
    labels,
    transport,
    signature: async (userId) => await app.git.signature(userId),
    canRead: async (repo, userId) => await access.canRead(repo, userId),
    onError: (error) => { app.log.error({ err: error }, 'merge requests did not follow a push') }
  })
  for (const schema of mergeRequestSchemas) app.addSchema(schema)
  app.decorate('gitMergeRequests', family)
}

export default fp(gitMergeRequestsPlugin, {
  name: 'plinth-git-merge-requests',
  fastify: '5.x',
  dependencies: ['plinth-store', 'plinth-projects', 'plinth-orgs', 'plinth-git']
})
