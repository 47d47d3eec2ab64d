import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { ListQuery } from '../../schemas/tracker.js'
import { CommentBody, ReactionBody } from '../../schemas/tracker-work-items.js'
import { CommentParams, CommentReactionParams, ItemParams, ItemReactionParams, TrackerResponses } from '../../schemas/tracker-routes.js'
import { trackerErrors as e } from '../../services/tracker/errors.js'
import { created, deleted, ok } from '../replies.js'
import { ITEM, LIST, WRITE } from './refusals.js'

const COMMENT = [...ITEM, e.commentNotFound]
const REACTING = [e.invalidValue, e.reactionExists, ...WRITE]
const REACTED = 'The answer is every reaction on it, per emoji; Location names the caller\'s reaction (to take it back).'
const MENTIONS = 'Markdown (`<@userId>` mentions) or editor JSON (`mention` nodes); the author and the people mentioned who can see the ' +
  'item are subscribed to it.'

/** `…/work-items/:itemId/comments` and the reactions on an item and on its comments. */
const commentRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { comments } = app.tracker
  const tags = ['tracker']

  app.get('/comments', {
    config: { permission: 'tracker.read', errors: [...ITEM, ...LIST] },
    schema: {
      operationId: 'listTrackerComments',
      tags,
      summary: 'An item\'s comments, oldest first, with their reactions',
      params: ItemParams,
      querystring: ListQuery,
      response: TrackerResponses.commentList
    }
  }, async (request) => ok(await comments.list(request.scope.trackerProject, request.params.itemId, request.query)))

  app.post('/comments', {
    config: { permission: 'tracker.write', errors: [...ITEM, e.invalidValue, ...WRITE] },
    schema: {
      operationId: 'createTrackerComment',
      tags,
      summary: 'Comment on an item',
      description: MENTIONS,
      params: ItemParams,
      body: CommentBody,
      response: TrackerResponses.commentCreated
    }
  }, async (request, reply) => created(reply, await comments.create(request.scope.trackerProject, request.params.itemId, request.body)))

  app.patch('/comments/:commentId', {
    config: { permission: 'tracker.write', errors: [...COMMENT, e.invalidValue, e.notYours, ...WRITE] },
    schema: {
      operationId: 'updateTrackerComment',
      tags,
      summary: 'Edit one\'s own comment',
      description: MENTIONS,
      params: CommentParams,
      body: CommentBody,
      response: TrackerResponses.comment
    }
  }, async (request) => {
    const { itemId, commentId } = request.params
    return ok(await comments.update(request.scope.trackerProject, itemId, commentId, request.body))
  })

  app.delete('/comments/:commentId', {
    config: { permission: 'tracker.write', errors: [...COMMENT, e.notYours, ...WRITE] },
    schema: {
      operationId: 'deleteTrackerComment',
      tags,
      summary: 'Delete a comment (its author or an admin)',
      params: CommentParams,
      response: TrackerResponses.deleted
    }
  }, async (request) => {
    await comments.delete(request.scope.trackerProject, request.params.itemId, request.params.commentId)
    return deleted(request.params.commentId)
  })

  app.get('/reactions', {
    config: { permission: 'tracker.read', errors: ITEM },
    schema: {
      operationId: 'listTrackerItemReactions',
      tags,
      summary: 'The reactions on an item, per emoji',
      params: ItemParams,
      response: TrackerResponses.reactions
    }
  }, async (request) => ok(await comments.reactionsOf(request.scope.trackerProject, request.params.itemId)))

  app.post('/reactions', {
    config: { permission: 'tracker.write', errors: [...ITEM, ...REACTING] },
    schema: {
      operationId: 'addTrackerItemReaction',
      tags,
      summary: 'React to an item with an emoji',
      description: REACTED,
      params: ItemParams,
      body: ReactionBody,
      response: TrackerResponses.reactionsAdded
    }
  }, async (request, reply) => {
    const reactions = await comments.react(request.scope.trackerProject, request.params.itemId, request.body.emoji)
    return created(reply, reactions, { id: request.body.emoji })
  })

  app.delete('/reactions/:emoji', {
    config: { permission: 'tracker.write', errors: [...ITEM, e.reactionNotFound, ...WRITE] },
    schema: {
      operationId: 'removeTrackerItemReaction',
      tags,
      summary: 'Take back one\'s reaction to an item',
      params: ItemReactionParams,
      response: TrackerResponses.deleted
    }
  }, async (request) => {
    await comments.unreact(request.scope.trackerProject, request.params.itemId, request.params.emoji)
    return deleted(request.params.emoji)
  })

  app.get('/comments/:commentId/reactions', {
    config: { permission: 'tracker.read', errors: COMMENT },
    schema: {
      operationId: 'listTrackerCommentReactions',
      tags,
      summary: 'The reactions on a comment, per emoji',
      params: CommentParams,
      response: TrackerResponses.reactions
    }
  }, async (request) => ok(await comments.reactionsOf(request.scope.trackerProject, request.params.itemId, request.params.commentId)))

  app.post('/comments/:commentId/reactions', {
    config: { permission: 'tracker.write', errors: [...COMMENT, ...REACTING] },
    schema: {
      operationId: 'addTrackerCommentReaction',
      tags,
      summary: 'React to a comment with an emoji',
      description: REACTED,
      params: CommentParams,
      body: ReactionBody,
      response: TrackerResponses.reactionsAdded
    }
  }, async (request, reply) => {
    const { itemId, commentId } = request.params
    const reactions = await comments.react(request.scope.trackerProject, itemId, request.body.emoji, commentId)
    return created(reply, reactions, { id: request.body.emoji })
  })

  app.delete('/comments/:commentId/reactions/:emoji', {
    config: { permission: 'tracker.write', errors: [...COMMENT, e.reactionNotFound, ...WRITE] },
    schema: {
      operationId: 'removeTrackerCommentReaction',
      tags,
      summary: 'Take back one\'s reaction to a comment',
      params: CommentReactionParams,
      response: TrackerResponses.deleted
    }
  }, async (request) => {
    const { itemId, commentId, emoji } = request.params
    await comments.unreact(request.scope.trackerProject, itemId, emoji, commentId)
    return deleted(emoji)
  })
}

export default commentRoutes
