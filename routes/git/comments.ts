import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import { ApplySuggestionsBody, CommentParams, CreateCommentBody, EditCommentBody, MergeRequestResponses, MrParams, ReactionBody } from '../../schemas/git-merge-requests.js'
import { platformCaller } from '../../plugins/auth.js'
import { repoOfRequest } from '../../plugins/git.js'
import { createdAt } from '../location.js'

/** Comments on a merge request and reactions to it and to its comments: `git.read` to read and to take part. */
const commentRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { mergeRequests, comments, reactions, suggestions } = app.gitMergeRequests
  const tags = ['git']
  const preHandler = app.requireRepoPermission('git.read')
  const located = async (request: FastifyRequest) => {
    const { repo } = repoOfRequest(request)
    return { repo, mr: await mergeRequests.get(repo, (request.params as { iid: number }).iid) }
  }
  const mrOf = async (request: FastifyRequest) => (await located(request)).mr

  app.get('/merge-requests/:iid/comments', {
    config: { auth: 'platform' },
    preHandler,
    schema: { operationId: 'listGitMergeRequestComments', tags, summary: 'Comments, oldest first; replies name their thread', description: 'Needs `git.read`.', params: MrParams, response: MergeRequestResponses.comments }
  }, async (request) => {
    const { repo, mr } = await located(request)
    return { success: true as const, data: await comments.list(repo, mr) }
  })

  app.post('/merge-requests/:iid/comments', {
    config: { auth: 'platform' },
    preHandler,
    schema: { operationId: 'createGitMergeRequestComment', tags, summary: 'Comment, inline at lines of a file, or in reply to a thread', description: 'Needs `git.read`. An inline `position` names a file and lines as a commit of the source shows them (`side: new`) or as the merge base does (`side: old`); one that does not fit is 400 `APP_GIT_COMMENT_POSITION`. A reply takes `replyTo` and no position (400 `APP_GIT_COMMENT_REPLY_POSITION`).', params: MrParams, body: CreateCommentBody, response: MergeRequestResponses.commentCreated }
  }, async (request, reply) => {
    const { repo, mr } = await located(request)
    const comment = await comments.create(repo, mr, platformCaller(request).userId, request.body)
    return reply.code(201).header('location', createdAt(request, comment.id)).send({ success: true as const, data: comment })
  })

  app.patch('/merge-requests/:iid/comments/:commentId', {
    config: { auth: 'platform' },
    preHandler,
    schema: { operationId: 'editGitMergeRequestComment', tags, summary: 'Edit a comment\'s text', description: 'Needs `git.read`; only the author (403 `APP_GIT_COMMENT_NOT_YOURS`).', params: CommentParams, body: EditCommentBody, response: MergeRequestResponses.comment }
  }, async (request) => ({ success: true as const, data: await comments.edit(await mrOf(request), request.params.commentId, platformCaller(request).userId, request.body.body) }))

  app.delete('/merge-requests/:iid/comments/:commentId', {
    config: { auth: 'platform' },
    preHandler,
    schema: { operationId: 'deleteGitMergeRequestComment', tags, summary: 'Delete a comment; a thread\'s first comment takes its replies along', description: 'Needs `git.read`; the author or a `git.admin` holder (403 `APP_GIT_COMMENT_NOT_YOURS`).', params: CommentParams, response: MergeRequestResponses.commentDeleted }
  }, async (request) => {
    await comments.delete(await mrOf(request), request.params.commentId, platformCaller(request).userId, repoOfRequest(request).permissions.has('git.admin'))
    return { success: true as const, data: { id: request.params.commentId, deleted: true as const } }
  })

  for (const resolved of [true, false]) {
    app.post(`/merge-requests/:iid/comments/:commentId/${resolved ? 'resolve' : 'unresolve'}`, {
      config: { auth: 'platform' },
      preHandler,
      schema: { operationId: resolved ? 'resolveGitMergeRequestThread' : 'unresolveGitMergeRequestThread', tags, summary: resolved ? 'Resolve the thread a comment starts' : 'Reopen a resolved thread', description: 'Needs `git.read`. Through the thread\'s first comment (400 `APP_GIT_COMMENT_NOT_A_THREAD`); 409 `APP_GIT_THREAD_STATE` when it is in that state already.', params: CommentParams, response: MergeRequestResponses.comment }
    }, async (request) => ({ success: true as const, data: await comments.resolve(await mrOf(request), request.params.commentId, platformCaller(request).userId, resolved) }))
  }

  app.post('/merge-requests/:iid/suggestions/apply', {
    config: { auth: 'platform' },
    preHandler: app.requireRepoPermission('git.write'),
    schema: { operationId: 'applyGitSuggestions', tags, summary: 'Apply the suggestions of inline comments to the source branch as one commit', description: 'Needs `git.write`, and leave to push to the source branch (403 `APP_GIT_BRANCH_PROTECTED`). Each comment must be inline on the new side with a ```suggestion block (400 `APP_GIT_NO_SUGGESTION`), not applied yet nor outdated (409 `APP_GIT_SUGGESTION_APPLIED`, `APP_GIT_SUGGESTION_OUTDATED`), and suggestions on one file may not overlap (400 `APP_GIT_SUGGESTIONS_OVERLAP`). The commit is authored by the first suggester (the others as `Co-authored-by`) and committed by the caller; a push to the source meanwhile makes it 409 `APP_GIT_MR_HEAD_CHANGED`.', params: MrParams, body: ApplySuggestionsBody, response: MergeRequestResponses.suggestionsApplied }
  }, async (request) => {
    const { repo, permissions } = repoOfRequest(request)
    const level = permissions.has('git.admin') ? 'admin' : 'write'
    const { commitSha, mr } = await suggestions.apply(repo, request.params.iid, { userId: platformCaller(request).userId, level }, request.body)
    return { success: true as const, data: { commitSha, mergeRequest: await mergeRequests.view(mr) } }
  })

  app.get('/merge-requests/:iid/reactions', {
    config: { auth: 'platform' },
    preHandler,
    schema: { operationId: 'listGitMergeRequestReactions', tags, summary: 'Reactions to a merge request, by emoji', description: 'Needs `git.read`.', params: MrParams, response: MergeRequestResponses.reactions }
  }, async (request) => ({ success: true as const, data: await reactions.list('mr', (await mrOf(request))._id) }))

  app.post('/merge-requests/:iid/reactions', {
    config: { auth: 'platform' },
    preHandler,
    schema: { operationId: 'addGitMergeRequestReaction', tags, summary: 'React to a merge request', description: 'Needs `git.read`. Once per emoji and person (409 `APP_GIT_REACTION_EXISTS`). Answers with all its reactions.', params: MrParams, body: ReactionBody, response: MergeRequestResponses.reactions }
  }, async (request) => {
    const mr = await mrOf(request)
    return { success: true as const, data: await reactions.add('mr', mr._id, mr._id, platformCaller(request).userId, request.body.emoji) }
  })

  app.delete('/merge-requests/:iid/reactions', {
    config: { auth: 'platform' },
    preHandler,
    schema: { operationId: 'removeGitMergeRequestReaction', tags, summary: 'Take back a reaction to a merge request', description: 'Needs `git.read`. The emoji in `?emoji=`; 404 `APP_GIT_REACTION_NOT_FOUND` when there is none of yours.', params: MrParams, querystring: ReactionBody, response: MergeRequestResponses.reactions }
  }, async (request) => ({ success: true as const, data: await reactions.remove('mr', (await mrOf(request))._id, platformCaller(request).userId, request.query.emoji) }))

  app.get('/merge-requests/:iid/comments/:commentId/reactions', {
    config: { auth: 'platform' },
    preHandler,
    schema: { operationId: 'listGitCommentReactions', tags, summary: 'Reactions to a comment, by emoji', description: 'Needs `git.read`.', params: CommentParams, response: MergeRequestResponses.reactions }
  }, async (request) => {
    const comment = await comments.get(await mrOf(request), request.params.commentId)
    return { success: true as const, data: await reactions.list('comment', comment._id) }
  })

  app.post('/merge-requests/:iid/comments/:commentId/reactions', {
    config: { auth: 'platform' },
    preHandler,
    schema: { operationId: 'addGitCommentReaction', tags, summary: 'React to a comment', description: 'Needs `git.read`. Once per emoji and person (409 `APP_GIT_REACTION_EXISTS`).', params: CommentParams, body: ReactionBody, response: MergeRequestResponses.reactions }
  }, async (request) => {
    const comment = await comments.get(await mrOf(request), request.params.commentId)
    return { success: true as const, data: await reactions.add('comment', comment._id, comment.mrId, platformCaller(request).userId, request.body.emoji) }
  })

  app.delete('/merge-requests/:iid/comments/:commentId/reactions', {
    config: { auth: 'platform' },
    preHandler,
    schema: { operationId: 'removeGitCommentReaction', tags, summary: 'Take back a reaction to a comment', description: 'Needs `git.read`. The emoji in `?emoji=`.', params: CommentParams, querystring: ReactionBody, response: MergeRequestResponses.reactions }
  }, async (request) => {
    const comment = await comments.get(await mrOf(request), request.params.commentId)
    return { success: true as const, data: await reactions.remove('comment', comment._id, platformCaller(request).userId, request.query.emoji) }
  })
}

export default commentRoutes
