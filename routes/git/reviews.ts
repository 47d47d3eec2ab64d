import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import { MergeRequestResponses, MrParams, ReviewBody, ReviewParams } from '../../schemas/git-merge-requests.js'
import { platformCaller } from '../../plugins/auth.js'
import { repoOfRequest } from '../../plugins/git.js'

/** Reviews of a merge request: `git.read` to see them, `git.write` to give one, `git.admin` to dismiss one. */
const reviewRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { mergeRequests, reviews } = app.gitMergeRequests
  const tags = ['git']
  const mrOf = async (request: FastifyRequest) => await mergeRequests.get(repoOfRequest(request).repo, (request.params as { iid: number }).iid)

  app.get('/merge-requests/:iid/reviews', {
    config: { auth: 'platform' },
    preHandler: app.requireRepoPermission('git.read'),
    schema: { operationId: 'listGitReviews', tags, summary: 'Reviews of a merge request, oldest first', description: 'Needs `git.read`. Stale reviews were given on an older source head and no longer count.', params: MrParams, response: MergeRequestResponses.reviews }
  }, async (request) => ({ success: true as const, data: await reviews.list((await mrOf(request))._id) }))

  app.post('/merge-requests/:iid/reviews', {
    config: { auth: 'platform' },
    preHandler: app.requireRepoPermission('git.write'),
    schema: { operationId: 'createGitReview', tags, summary: 'Approve, request changes or comment on the current source head', description: 'Needs `git.write`. The author cannot approve or request changes on their own merge request (403 `APP_GIT_MR_SELF_REVIEW`); requesting changes or commenting needs a body (400 `APP_GIT_REVIEW_BODY_REQUIRED`); only open merge requests (409 `APP_GIT_MR_NOT_OPEN`). Each reviewer\'s latest approval or change request counts until the source moves.', params: MrParams, body: ReviewBody, response: MergeRequestResponses.reviewCreated }
  }, async (request, reply) => {
    const mr = await mrOf(request)
    const review = await reviews.create({ id: mr._id, authorId: mr.authorId, headSha: mr.headSha, open: mr.state === 'open' }, platformCaller(request).userId, request.body)
    return reply.code(201).send({ success: true as const, data: review })
  })

  app.post('/merge-requests/:iid/reviews/:reviewId/dismiss', {
    config: { auth: 'platform' },
    preHandler: app.requireRepoPermission('git.admin'),
    schema: { operationId: 'dismissGitReview', tags, summary: 'Dismiss an approval or a change request so it no longer counts', description: 'Needs `git.admin`. Comments cannot be dismissed (404 `APP_GIT_REVIEW_NOT_FOUND`).', params: ReviewParams, response: MergeRequestResponses.review }
  }, async (request) => ({ success: true as const, data: await reviews.dismiss((await mrOf(request))._id, request.params.reviewId, platformCaller(request).userId) }))
}

export default reviewRoutes
