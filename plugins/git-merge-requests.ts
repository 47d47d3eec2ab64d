import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import { systemClock } from '../services/platform/clock.js'
import { newId } from '../services/platform/ids.js'
import { mergeRequestSchemas } from '../schemas/git-merge-requests.js'
import { gitErrors } from '../services/git/errors.js'
import type { Comment } from '../services/git/merge-requests/comments.js'
import { buildMergeRequestServices, type MergeRequestServices } from '../services/git/merge-requests/index.js'
import type { Mr } from '../services/git/merge-requests/records.js'

declare module 'fastify' {
  interface FastifyInstance {
    gitMergeRequests: MergeRequestServices
  }
}

declare module './permissions.js' {
  interface ParentKinds {
    /** The repository's merge request numbered `params.iid`, brought up to date with its branches. */
    mergeRequest: Mr
    /** The merge request's comment `params.commentId`. */
    mergeRequestComment: Comment
  }
}

/**
 * Merge requests, reviews and merging on top of git hosting. It joins the
 * git plugin's hook lists (a repository deleted, a push received) rather
 * than the other way round, so plinth-git knows nothing of merge requests,
 * and offers the merge request and its comments as parents under the
 * repository.
 */
async function gitMergeRequestsPlugin (app: FastifyInstance): Promise<void> {
  const { git } = app
  const services = await buildMergeRequestServices({
    store: app.store,
    clock: systemClock,
    newId,
    git: git.git,
    reader: git.reader,
    repositories: git.repositories,
    protection: git.protection,
    labels: git.labels,
    transport: git.transport,
    signature: git.signature,
    canRead: async (repo, userId) => await git.access.canRead(repo, userId),
    onError: (error) => { app.log.error({ err: error }, 'merge requests did not follow a push') }
  })
  for (const schema of mergeRequestSchemas) app.addSchema(schema)
  app.registerParent('mergeRequest', {
    within: 'repository',
    errors: [gitErrors.mrNotFound],
    load: async (request, { scope }) => ({ value: await services.mergeRequests.get(scope.repository, (request.params as { iid: number }).iid) })
  })
  app.registerParent('mergeRequestComment', {
    within: 'mergeRequest',
    errors: [gitErrors.commentNotFound],
    load: async (request, { scope }) => ({ value: await services.comments.get(scope.mergeRequest, (request.params as { commentId: string }).commentId) })
  })
  app.decorate('gitMergeRequests', services)
}

export default fp(gitMergeRequestsPlugin, {
  name: 'plinth-git-merge-requests',
  fastify: '5.x',
  dependencies: ['plinth-store', 'plinth-permissions', 'plinth-git']
})
