import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { PlatformTrackerParams } from '../../schemas/tracker-routes.js'
import { CreateExportBody, ExportDownloadQuery, ExportListQuery, ExportParams, ExportResponses } from '../../schemas/tracker-reports.js'
import { trackerActor } from '../../services/tracker/access.js'
import { trackerErrors as e } from '../../services/tracker/errors.js'
import { deleted, ok } from '../replies.js'
import { LIST } from './refusals.js'

/**
 * `/tracker/exports`: work items to CSV, JSON or XLSX as jobs on the durable
 * queue; each user sees their own history. A completed export's view holds a
 * signed download link that needs no credential until it expires.
 */
const exportRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { exports } = app.tracker
  const tags = ['tracker']
  app.routeDefaults({ parent: 'project', permission: 'tracker.read' })
  const actorOf = (request: { caller: { user: { userId: string } }, scope: { permissions: Iterable<string> } }) =>
    trackerActor(request.caller.user.userId, request.scope.permissions)

  app.post('', {
    config: { errors: [e.projectNotFound, e.invalidFilter, e.invalidValue] },
    schema: {
      operationId: 'createTrackerExport',
      tags,
      summary: 'Export the work items of a tracker project the caller sees, with a filter and optionally their comments',
      description: 'Answers 202 with the export `queued`; poll it until `completed` (then `download.url` holds a signed link) ' +
        'or `failed`. Access is checked again when the job runs. Archived items, drafts and triage are left out unless the ' +
        'filter names them.',
      params: PlatformTrackerParams,
      body: CreateExportBody,
      response: ExportResponses.created
    }
  }, async (request, reply) => {
    void reply.code(202)
    return ok(await exports.create(actorOf(request), request.params.projectId, request.body))
  })

  app.get('', {
    config: { errors: LIST },
    schema: {
      operationId: 'listTrackerExports',
      tags,
      summary: 'The caller\'s exports, newest first',
      params: PlatformTrackerParams,
      querystring: ExportListQuery,
      response: ExportResponses.list
    }
  }, async (request) => ok(await exports.list(actorOf(request), request.params.projectId, request.query)))

  app.get('/:exportId', {
    config: { errors: [e.exportNotFound] },
    schema: {
      operationId: 'getTrackerExport',
      tags,
      summary: 'One of the caller\'s exports, with a fresh download link once completed',
      params: ExportParams,
      response: ExportResponses.export
    }
  }, async (request) => ok(await exports.get(actorOf(request), request.params.projectId, request.params.exportId)))

  app.delete('/:exportId', {
    config: { errors: [e.exportNotFound] },
    schema: {
      operationId: 'deleteTrackerExport',
      tags,
      summary: 'Delete one of the caller\'s exports and its file',
      params: ExportParams,
      response: ExportResponses.deleted
    }
  }, async (request) => {
    await exports.delete(actorOf(request), request.params.projectId, request.params.exportId)
    return deleted(request.params.exportId)
  })

  app.get('/:exportId/download', {
    config: { auth: 'none', parent: undefined, permission: undefined, errors: [e.exportLinkInvalid, e.exportNotFound, e.exportNotReady] },
    schema: {
      operationId: 'downloadTrackerExport',
      tags,
      summary: 'The export\'s file, through the signed link its view gives',
      description: 'The link is the credential: it names the export and when it expires, signed by the server. Errors are JSON.',
      params: ExportParams,
      querystring: ExportDownloadQuery,
      response: ExportResponses.file
    }
  }, async (request, reply) => {
    const { projectId, exportId } = request.params
    const file = await exports.download(projectId, exportId, request.query.expires, request.query.signature)
    void reply.type(file.contentType).header('content-length', file.size).header('cache-control', 'private, no-store')
      .header('content-disposition', `attachment; filename="${file.filename}"`)
    return await reply.send(file.body)
  })
}

export default exportRoutes
