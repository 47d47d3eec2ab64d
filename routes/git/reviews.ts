import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { MergeRequestResponses, MrParams, ReviewBody, ReviewParams } from '../../schemas/git-merge-requests.js'
import { gitErrors } from '../../services/git/errors.js'
import { created, ok } from '../replies.js'

/** Reviews of a merge request: `git.read` to see them, `git.write` to give one, `git.admin` to dismiss one. */
const reviewRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { reviews } = app.gitMergeRequests
  const tags = ['git']
  app.routeDefaults({ parent: 'mergeRequest' })

  app.get('/merge-requests/:iid/reviews', {
    config: { permission: 'git.read' },
    schema: {
      operationId: 'listGitReviews',
      tags,
      summary: 'Reviews of a merge request, oldest first',
      description: 'Stale reviews were given on an older source head and no longer count.',
      params: MrParams,
      response: MergeRequestResponses.reviews
    }
  }, async (request) => ok(await reviews.list(request.scope.mergeRequest)))

  app.post('/merge-requests/:iid/reviews', {
    config: { permission: 'git.write', errors: [gitErrors.mrSelfReview, gitErrors.reviewBodyRequired, gitErrors.mrNotOpen] },
    schema: {
      operationId: 'createGitReview',
      tags,
      summary: 'Approve, request changes or comment on the current source head',
      description: 'The author cannot approve or request changes on their own merge request; ' +
        'requesting changes or commenting needs a body; ' +
        'only open merge requests. Each reviewer\'s latest approval or change request counts until the source moves.',
      params: MrParams,
      body: ReviewBody,
      response: MergeRequestResponses.reviewCreated
    }
  }, async (request, reply) => {
    return created(reply, await reviews.create(request.scope.mergeRequest, request.caller.user.userId, request.body))
  })

  app.post('/merge-requests/:iid/reviews/:reviewId/dismiss', {
    config: { permission: 'git.admin', errors: [gitErrors.reviewNotFound] },
    schema: {
      operationId: 'dismissGitReview',
      tags,
      summary: 'Dismiss an approval or a change request so it no longer counts',
      description: 'Comments cannot be dismissed.',
      params: ReviewParams,
      response: MergeRequestResponses.review
    }
  }, async (request) => ok(await reviews.dismiss(request.scope.mergeRequest, request.params.reviewId, request.caller.user.userId)))
}

export default reviewRoutes
