import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import {
  ApplySuggestionsBody, CommentParams, CreateCommentBody, EditCommentBody, MergeRequestResponses, MrParams, ReactionBody
} from '../../schemas/git-merge-requests.js'
import { gitErrors } from '../../services/git/errors.js'
import { onComment, onMergeRequest } from '../../services/git/merge-requests/reactions.js'
import { created, deleted, ok } from '../replies.js'
import { actorOf } from './actor.js'

/** What writing a comment may meet. */
const COMMENT_WRITES = [
  gitErrors.commentEmpty, gitErrors.tooManyComments, gitErrors.commentUnknown, gitErrors.commentReplyPosition, gitErrors.commentPosition
]

/** What applying suggestions may meet. */
const SUGGESTION_REFUSALS = [
  gitErrors.branchProtected, gitErrors.mrNotOpen, gitErrors.mrSourceMissing, gitErrors.mrHeadChanged, gitErrors.commentNotFound,
  gitErrors.noSuggestion, gitErrors.suggestionApplied, gitErrors.suggestionOutdated, gitErrors.suggestionsOverlap
]

/** Comments on a merge request and reactions to it and to its comments: `git.read` to read and to take part. */
const commentRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { mergeRequests, comments, reactions, suggestions } = app.gitMergeRequests
  const tags = ['git']
  app.routeDefaults({ parent: 'mergeRequest', permission: 'git.read' })

  app.get('/merge-requests/:iid/comments', {
    schema: {
      operationId: 'listGitMergeRequestComments',
      tags,
      summary: 'Comments, oldest first; replies name their thread',
      params: MrParams,
      response: MergeRequestResponses.comments
    }
  }, async (request) => ok(await comments.list(request.scope.repository, request.scope.mergeRequest)))

  app.post('/merge-requests/:iid/comments', {
    config: { errors: COMMENT_WRITES },
    schema: {
      operationId: 'createGitMergeRequestComment',
      tags,
      summary: 'Comment, inline at lines of a file, or in reply to a thread',
      description: 'An inline `position` names a file and lines as a commit of the source shows them (`side: new`) ' +
        'or as the merge base does (`side: old`). A reply takes `replyTo` and no position.',
      params: MrParams,
      body: CreateCommentBody,
      response: MergeRequestResponses.commentCreated
    }
  }, async (request, reply) => {
    const { repository, mergeRequest } = request.scope
    return created(reply, await comments.create(repository, mergeRequest, request.caller.user.userId, request.body))
  })

  app.post('/merge-requests/:iid/suggestions/apply', {
    config: { permission: 'git.write', errors: SUGGESTION_REFUSALS },
    schema: {
      operationId: 'applyGitSuggestions',
      tags,
      summary: 'Apply the suggestions of inline comments to the source branch as one commit',
      description: 'The caller must also be allowed to push to the source branch. ' +
        'Each comment must be inline on the new side with a ```suggestion block, ' +
        'not applied yet nor outdated, and suggestions on one file may not overlap. ' +
        'The commit is authored by the first suggester (the others as `Co-authored-by`) and committed by the caller; ' +
        'a push to the source meanwhile refuses it.',
      params: MrParams,
      body: ApplySuggestionsBody,
      response: MergeRequestResponses.suggestionsApplied
    }
  }, async (request) => {
    const { commitSha, mr } = await suggestions.apply(request.scope.repository, request.scope.mergeRequest, actorOf(request), request.body)
    return ok({ commitSha, mergeRequest: await mergeRequests.view(mr) })
  })

  app.get('/merge-requests/:iid/reactions', {
    schema: {
      operationId: 'listGitMergeRequestReactions',
      tags,
      summary: 'Reactions to a merge request, by emoji',
      params: MrParams,
      response: MergeRequestResponses.reactions
    }
  }, async (request) => ok(await reactions.list(onMergeRequest(request.scope.mergeRequest))))

  app.post('/merge-requests/:iid/reactions', {
    config: { errors: [gitErrors.reactionExists] },
    schema: {
      operationId: 'addGitMergeRequestReaction',
      tags,
      summary: 'React to a merge request',
      description: 'Once per emoji and person. Answers with all its reactions.',
      params: MrParams,
      body: ReactionBody,
      response: MergeRequestResponses.reactions
    }
  }, async (request) => ok(await reactions.add(onMergeRequest(request.scope.mergeRequest), request.caller.user.userId, request.body.emoji)))

  app.delete('/merge-requests/:iid/reactions', {
    config: { errors: [gitErrors.reactionNotFound] },
    schema: {
      operationId: 'removeGitMergeRequestReaction',
      tags,
      summary: 'Take back a reaction to a merge request',
      description: 'The emoji in `?emoji=`.',
      params: MrParams,
      querystring: ReactionBody,
      response: MergeRequestResponses.reactions
    }
  }, async (request) => {
    return ok(await reactions.remove(onMergeRequest(request.scope.mergeRequest), request.caller.user.userId, request.query.emoji))
  })

  const oneCommentRoutes: FastifyPluginAsyncTypebox = async (comment) => {
    comment.routeDefaults({ parent: 'mergeRequestComment' })

    comment.patch('', {
      config: { errors: [gitErrors.commentNotYours, gitErrors.commentEmpty] },
      schema: {
        operationId: 'editGitMergeRequestComment',
        tags,
        summary: 'Edit a comment\'s text',
        description: 'Only its author.',
        params: CommentParams,
        body: EditCommentBody,
        response: MergeRequestResponses.comment
      }
    }, async (request) => ok(await comments.edit(request.scope.mergeRequestComment, request.caller.user.userId, request.body.body)))

    comment.delete('', {
      config: { errors: [gitErrors.commentNotYours] },
      schema: {
        operationId: 'deleteGitMergeRequestComment',
        tags,
        summary: 'Delete a comment; a thread\'s first comment takes its replies along',
        description: 'Its author or a `git.admin` holder.',
        params: CommentParams,
        response: MergeRequestResponses.commentDeleted
      }
    }, async (request) => {
      await comments.delete(request.scope.mergeRequestComment, actorOf(request))
      return deleted(request.params.commentId)
    })

    for (const resolved of [true, false]) {
      comment.post(resolved ? '/resolve' : '/unresolve', {
        config: { errors: [gitErrors.commentNotAThread, gitErrors.threadState] },
        schema: {
          operationId: resolved ? 'resolveGitMergeRequestThread' : 'unresolveGitMergeRequestThread',
          tags,
          summary: resolved ? 'Resolve the thread a comment starts' : 'Reopen a resolved thread',
          description: 'Through the thread\'s first comment.',
          params: CommentParams,
          response: MergeRequestResponses.comment
        }
      }, async (request) => ok(await comments.resolve(request.scope.mergeRequestComment, request.caller.user.userId, resolved)))
    }

    comment.get('/reactions', {
      schema: {
        operationId: 'listGitCommentReactions',
        tags,
        summary: 'Reactions to a comment, by emoji',
        params: CommentParams,
        response: MergeRequestResponses.reactions
      }
    }, async (request) => ok(await reactions.list(onComment(request.scope.mergeRequestComment))))

    comment.post('/reactions', {
      config: { errors: [gitErrors.reactionExists] },
      schema: {
        operationId: 'addGitCommentReaction',
        tags,
        summary: 'React to a comment',
        description: 'Once per emoji and person.',
        params: CommentParams,
        body: ReactionBody,
        response: MergeRequestResponses.reactions
      }
    }, async (request) => {
      return ok(await reactions.add(onComment(request.scope.mergeRequestComment), request.caller.user.userId, request.body.emoji))
    })

    comment.delete('/reactions', {
      config: { errors: [gitErrors.reactionNotFound] },
      schema: {
        operationId: 'removeGitCommentReaction',
        tags,
        summary: 'Take back a reaction to a comment',
        description: 'The emoji in `?emoji=`.',
        params: CommentParams,
        querystring: ReactionBody,
        response: MergeRequestResponses.reactions
      }
    }, async (request) => {
      return ok(await reactions.remove(onComment(request.scope.mergeRequestComment), request.caller.user.userId, request.query.emoji))
    })
  }
  await app.register(oneCommentRoutes, { prefix: '/merge-requests/:iid/comments/:commentId' })
}

export default commentRoutes
