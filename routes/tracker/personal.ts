import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { ListQuery } from '../../schemas/tracker.js'
import {
  CreateFavoriteBody, CreateStickyBody, FavoriteParams, ReorderFavoriteBody, StickyParams, UpdateStickyBody, WorkspacePath,
  WorkspaceResponses as R
} from '../../schemas/tracker-workspace.js'
import { trackerErrors as e } from '../../services/tracker/errors.js'
import { created, deleted, ok } from '../replies.js'
import { LIST } from './refusals.js'
import { actorOf } from './workspace.js'

/**
 * `/tracker/stickies`, `/tracker/recents`, `/tracker/favorites`: the
 * caller's own things. Reading the tracker is enough to keep them, as for
 * the caller's notifications: no one else sees or changes them.
 */
const personalRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { personal } = app.tracker
  const tags = ['tracker']
  const inProject = { permission: 'tracker.read', parent: 'project' } as const

  app.get('/stickies', {
    config: { ...inProject, errors: LIST },
    schema: {
      operationId: 'listTrackerStickies',
      tags,
      summary: 'The caller\'s stickies, in their order',
      params: WorkspacePath,
      querystring: ListQuery,
      response: R.stickyList
    }
  }, async (request) => ok(await personal.listStickies(request.scope.project.id, request.caller.user.userId, request.query)))

  app.post('/stickies', {
    config: { ...inProject, errors: [e.limitReached] },
    schema: {
      operationId: 'createTrackerSticky',
      tags,
      summary: 'Write a sticky: a personal note (markdown), with a colour; new ones go first',
      params: WorkspacePath,
      body: CreateStickyBody,
      response: R.stickyCreated
    }
  }, async (request, reply) => {
    return created(reply, await personal.createSticky(request.scope.project.id, request.caller.user.userId, request.body))
  })

  app.get('/stickies/:stickyId', {
    config: { ...inProject, errors: [e.stickyNotFound] },
    schema: { operationId: 'getTrackerSticky', tags, summary: 'One of the caller\'s stickies', params: StickyParams, response: R.sticky }
  }, async (request) => ok(await personal.getSticky(request.scope.project.id, request.caller.user.userId, request.params.stickyId)))

  app.patch('/stickies/:stickyId', {
    config: { ...inProject, errors: [e.stickyNotFound] },
    schema: {
      operationId: 'updateTrackerSticky',
      tags,
      summary: 'Change a sticky: its text, colour or place in the order (`sortOrder`)',
      params: StickyParams,
      body: UpdateStickyBody,
      response: R.sticky
    }
  }, async (request) => {
    return ok(await personal.updateSticky(request.scope.project.id, request.caller.user.userId, request.params.stickyId, request.body))
  })

  app.delete('/stickies/:stickyId', {
    config: { ...inProject, errors: [e.stickyNotFound] },
    schema: { operationId: 'deleteTrackerSticky', tags, summary: 'Delete a sticky', params: StickyParams, response: R.deleted }
  }, async (request) => {
    await personal.deleteSticky(request.scope.project.id, request.caller.user.userId, request.params.stickyId)
    return deleted(request.params.stickyId)
  })

  app.get('/recents', {
    config: { ...inProject, errors: LIST },
    schema: {
      operationId: 'listTrackerRecents',
      tags,
      summary: 'What the caller opened lately (work items, pages, views, cycles, modules), most recent first',
      description: 'Noted when the caller reads one; the last 50 are kept. ' +
        'Those of tracker projects the caller no longer reads are left out.',
      params: WorkspacePath,
      querystring: ListQuery,
      response: R.recents
    }
  }, async (request) => ok(await personal.listRecents(actorOf(request), request.scope.project.id, request.query)))

  app.get('/favorites', {
    config: { ...inProject, errors: LIST },
    schema: {
      operationId: 'listTrackerFavorites',
      tags,
      summary: 'The caller\'s favorites, in their order',
      description: 'A favorite of something the caller can no longer read is left out (a page may then hold fewer than `limit`).',
      params: WorkspacePath,
      querystring: ListQuery,
      response: R.favoriteList
    }
  }, async (request) => ok(await personal.listFavorites(actorOf(request), request.scope.project.id, request.query)))

  app.post('/favorites', {
    config: { ...inProject, errors: [e.invalidReference, e.invalidValue, e.alreadyFavorite, e.limitReached] },
    schema: {
      operationId: 'addTrackerFavorite',
      tags,
      summary: 'Make a project, view, cycle, module or page a favorite; new ones go first',
      description: 'Only what the caller reads: `lpId` a tracker project they read, `entityId` something in it they read.',
      params: WorkspacePath,
      body: CreateFavoriteBody,
      response: R.favoriteCreated
    }
  }, async (request, reply) => created(reply, await personal.addFavorite(actorOf(request), request.scope.project.id, request.body)))

  app.patch('/favorites/:favoriteId', {
    config: { ...inProject, errors: [e.favoriteNotFound] },
    schema: {
      operationId: 'reorderTrackerFavorite',
      tags,
      summary: 'Move a favorite: any number between its new neighbours\' `sortOrder`',
      params: FavoriteParams,
      body: ReorderFavoriteBody,
      response: R.favorite
    }
  }, async (request) => {
    const { favoriteId } = request.params
    return ok(await personal.reorderFavorite(request.scope.project.id, request.caller.user.userId, favoriteId, request.body.sortOrder))
  })

  app.delete('/favorites/:favoriteId', {
    config: { ...inProject, errors: [e.favoriteNotFound] },
    schema: { operationId: 'removeTrackerFavorite', tags, summary: 'Remove a favorite', params: FavoriteParams, response: R.deleted }
  }, async (request) => {
    await personal.removeFavorite(request.scope.project.id, request.caller.user.userId, request.params.favoriteId)
    return deleted(request.params.favoriteId)
  })
}

export default personalRoutes
