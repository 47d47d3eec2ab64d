import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { ListQuery } from '../../schemas/tracker.js'
import { CreatePageBody, ListPagesQuery, UpdatePageBody } from '../../schemas/tracker-planning.js'
import { IfMatchHeaders, PageParams, PageVersionParams, TrackerProjectPath, TrackerResponses } from '../../schemas/tracker-routes.js'
import { trackerErrors as e } from '../../services/tracker/errors.js'
import { opened } from './recents.js'
import { created, deleted, ok } from '../replies.js'
import { CONDITIONAL, LIST, WRITE } from './refusals.js'
import { ifMatch, tagged } from '../conditional.js'

/** Pages are a feature a project may switch off, and guests do not use them. */
const PAGES = [e.featureDisabled, e.guestRefused]
const PAGE = [...PAGES, e.pageNotFound]
const PAGE_FIELDS = [e.invalidValue, e.invalidReference, e.parentLoop]
const VERSIONS = 'Edits by the same author within five minutes make one version; any other edit first keeps the page as it was as ' +
  'a version.'

/** `…/projects/:lpId/pages`: markdown pages, nested, lockable, archivable, with their versions. */
const pageRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { pages } = app.tracker
  const tags = ['tracker']

  app.get('', {
    config: { permission: 'tracker.read', errors: [...PAGES, ...LIST] },
    schema: {
      operationId: 'listTrackerPages',
      tags,
      summary: 'Top-level pages, or the children of `parentId`; public ones and the caller\'s private ones',
      params: TrackerProjectPath,
      querystring: ListPagesQuery,
      response: TrackerResponses.pageList
    }
  }, async (request) => ok(await pages.list(request.scope.trackerProject, request.query)))

  app.post('', {
    config: { permission: 'tracker.write', errors: [...PAGES, ...PAGE_FIELDS, ...WRITE] },
    schema: {
      operationId: 'createTrackerPage',
      tags,
      summary: 'Write a page',
      params: TrackerProjectPath,
      body: CreatePageBody,
      response: TrackerResponses.pageCreated
    }
  }, async (request, reply) => tagged(reply, created(reply, await pages.create(request.scope.trackerProject, request.body))))

  app.get('/:pageId', {
    config: { permission: 'tracker.read', errors: PAGE },
    schema: { operationId: 'getTrackerPage', tags, summary: 'One page', params: PageParams, response: TrackerResponses.page }
  }, async (request, reply) => {
    const { trackerProject } = request.scope
    return tagged(reply, ok(await opened(request, trackerProject, 'page', await pages.get(trackerProject, request.params.pageId))))
  })

  app.patch('/:pageId', {
    config: {
      permission: 'tracker.write',
      errors: [...PAGE, ...PAGE_FIELDS, e.pageLocked, e.pageArchived, e.notYours, ...CONDITIONAL, ...WRITE]
    },
    schema: {
      operationId: 'updateTrackerPage',
      tags,
      summary: 'Edit, move, share, lock or archive a page',
      description: 'A locked page refuses every change (423) but `locked: false` from its locker or an admin; an archived page every ' +
        `change but \`archived: false\`. Only its owner or an admin moves, shares or archives it. ${VERSIONS}`,
      params: PageParams,
      headers: IfMatchHeaders,
      body: UpdatePageBody,
      response: TrackerResponses.page
    }
  }, async (request, reply) => {
    return tagged(reply, ok(await pages.update(request.scope.trackerProject, request.params.pageId, request.body, ifMatch(request))))
  })

  app.delete('/:pageId', {
    config: { permission: 'tracker.write', errors: [...PAGE, e.pageLocked, e.notYours, ...WRITE] },
    schema: {
      operationId: 'deleteTrackerPage',
      tags,
      summary: 'Delete a page (its owner or an admin) and its versions; its children become top-level',
      params: PageParams,
      response: TrackerResponses.deleted
    }
  }, async (request) => {
    await pages.delete(request.scope.trackerProject, request.params.pageId)
    return deleted(request.params.pageId)
  })

  app.get('/:pageId/versions', {
    config: { permission: 'tracker.read', errors: [...PAGE, ...LIST] },
    schema: {
      operationId: 'listTrackerPageVersions',
      tags,
      summary: 'A page\'s versions, newest first, the page as it is now first of all',
      description: VERSIONS,
      params: PageParams,
      querystring: ListQuery,
      response: TrackerResponses.pageVersionList
    }
  }, async (request) => ok(await pages.listVersions(request.scope.trackerProject, request.params.pageId, request.query)))

  app.get('/:pageId/versions/:versionId', {
    config: { permission: 'tracker.read', errors: [...PAGE, e.pageVersionNotFound] },
    schema: {
      operationId: 'getTrackerPageVersion',
      tags,
      summary: 'One version of a page',
      params: PageVersionParams,
      response: TrackerResponses.pageVersion
    }
  }, async (request) => ok(await pages.getVersion(request.scope.trackerProject, request.params.pageId, request.params.versionId)))

  app.post('/:pageId/versions/:versionId/restore', {
    config: { permission: 'tracker.write', errors: [...PAGE, e.pageVersionNotFound, e.pageLocked, e.pageArchived, e.changed, ...WRITE] },
    schema: {
      operationId: 'restoreTrackerPageVersion',
      tags,
      summary: 'Make a version\'s title and content the page\'s again',
      description: 'An edit by the caller like any other: the page as it was is kept as a version.',
      params: PageVersionParams,
      response: TrackerResponses.page
    }
  }, async (request, reply) => {
    const { pageId, versionId } = request.params
    return tagged(reply, ok(await pages.restore(request.scope.trackerProject, pageId, versionId)))
  })
}

export default pageRoutes
