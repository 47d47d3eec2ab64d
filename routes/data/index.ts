import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { requestCaller } from '../../plugins/route-auth.js'
import {
  BulkDeleteQuery, BulkDeleteRequest, BulkUpdateBody, GetQuery, IfMatchHeaders, ListQuery, QueryBody, RecordBody, RecordIdParams, RecordParams, RecordResponses
} from '../../schemas/records.js'
import { badRequest } from '../../services/errors.js'
import fileRoutes from './files.js'
import { allowEnabledMethods } from './allowed-methods.js'
import { createdAt } from '../location.js'

const tags = ['data']

/** `If-Match: "3"`, `W/"3"` or `3` → 3. */
function ifMatchVersion (header: string | undefined): number | undefined {
  if (header === undefined) return undefined
  const match = /^(?:W\/)?"?(\d{1,15})"?$/.exec(header.trim())
  if (match === null) throw badRequest('APP_INVALID_IF_MATCH', 'If-Match must be a record version such as "3"')
  return Number(match[1])
}

/**
 * `/api/p/:projectId/:table`: the collection endpoints. Each method answers
 * under its own rule; the caller may be anonymous, an end user or a platform
 * admin (`auth: 'data'` works out which), and the rule decides.
 */
const dataRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { records } = app
  allowEnabledMethods(app)

  app.get('/:table', {
    config: { auth: 'data', collectionMethod: 'list', fastJson: true },
    schema: { operationId: 'listRecords', tags, summary: 'List records the caller\'s rule lets it see: filter, sort, cursor or offset pages, field selection', description: 'Under the collection\'s list rule. `filter` is MongoDB-style JSON over the collection\'s fields; pages follow `nextCursor` (or `offset`); `fields` selects what is returned; `count` adds the total.', params: RecordParams, querystring: ListQuery, response: RecordResponses.list }
  }, async (request) => {
    const { projectId, table } = request.params
    return { success: true as const, data: await records.list(projectId, table, requestCaller(request), request.query) }
  })

  app.post('/:table/query', {
    config: { auth: 'data', collectionMethod: 'list', fastJson: true },
    schema: { operationId: 'queryRecords', tags, summary: 'List records with the filter in the body, for filters too long for a URL', description: 'The same as listing, with the query in the body; under the list rule.', params: RecordParams, body: QueryBody, response: RecordResponses.list }
  }, async (request) => {
    const { projectId, table } = request.params
    return { success: true as const, data: await records.list(projectId, table, requestCaller(request), request.body) }
  })

  app.get('/:table/:id', {
    config: { auth: 'data', collectionMethod: 'get' },
    schema: { operationId: 'getRecord', tags, summary: 'One record, if the get rule lets the caller see it', description: 'Under the collection\'s get rule; a record outside it is 404. The answer\'s ETag is the record\'s version.', params: RecordIdParams, querystring: GetQuery, response: RecordResponses.one }
  }, async (request, reply) => {
    const { projectId, table, id } = request.params
    const record = await records.get(projectId, table, requestCaller(request), id, request.query.fields)
    if (typeof record.version === 'number') void reply.header('etag', `"${record.version}"`)
    return { success: true as const, data: record }
  })

  app.post('/:table', {
    config: { auth: 'data', collectionMethod: 'create' },
    schema: { operationId: 'createRecord', tags, summary: 'Create a record', description: 'Under the collection\'s create rule. Unknown fields are refused, never dropped. Location names the new record and ETag its version.', params: RecordParams, body: RecordBody, response: RecordResponses.created }
  }, async (request, reply) => {
    const { projectId, table } = request.params
    const record = await records.create(projectId, table, requestCaller(request), request.body)
    return reply.code(201).headers({ location: createdAt(request, record.id), etag: `"${String(record.version)}"` }).send({ success: true as const, data: record })
  })

  app.put('/:table/:id', {
    config: { auth: 'data', collectionMethod: 'update' },
    schema: { operationId: 'updateRecord', tags, summary: 'Change the fields given; with If-Match only if the record is still at that version (412 otherwise)', description: 'Under the collection\'s update rule. Only the fields given change. Clearing a file field (`null`, or `[]` on a multiple one) deletes its files, so it needs the fileDelete rule too (403 `APP_FORBIDDEN`). With `If-Match` the change applies only if the record is still at that version (412 `APP_VERSION_MISMATCH` otherwise).', params: RecordIdParams, headers: IfMatchHeaders, body: RecordBody, response: RecordResponses.updated }
  }, async (request, reply) => {
    const { projectId, table, id } = request.params
    const record = await records.update(projectId, table, requestCaller(request), id, request.body, ifMatchVersion(request.headers['if-match']))
    return reply.header('etag', `"${String(record.version)}"`).send({ success: true as const, data: record })
  })

  app.delete('/:table/:id', {
    config: { auth: 'data', collectionMethod: 'delete' },
    schema: { operationId: 'deleteRecord', tags, summary: 'Delete a record and its files', description: 'Under the collection\'s delete rule; `If-Match` as on update. The record\'s files go with it.', params: RecordIdParams, headers: IfMatchHeaders, response: RecordResponses.deleted }
  }, async (request) => {
    const { projectId, table, id } = request.params
    await records.delete(projectId, table, requestCaller(request), id, ifMatchVersion(request.headers['if-match']))
    return { success: true as const, data: { id, deleted: true as const } }
  })

  app.patch('/:table', {
    config: { auth: 'data', collectionMethod: 'update' },
    schema: { operationId: 'bulkUpdateRecords', tags, summary: 'Set fields on every record matching a filter, under the update rule', description: 'Needs the update method enabled and a filter that selects something by its form (400 `APP_FILTER_REQUIRED`). Clearing a file field deletes its files: the fileDelete rule must allow it on every matched record (403 `APP_FORBIDDEN`, nothing changed). `dryRun` only counts; more matches than `maxAffected` change nothing (409 `APP_TOO_MANY_AFFECTED`).', params: RecordParams, body: BulkUpdateBody, response: RecordResponses.bulkUpdated }
  }, async (request) => {
    const { projectId, table } = request.params
    return { success: true as const, data: await records.bulkUpdate(projectId, table, requestCaller(request), request.body) }
  })

  app.delete('/:table', {
    config: { auth: 'data', collectionMethod: 'delete' },
    schema: { operationId: 'bulkDeleteRecords', tags, summary: 'Delete every record matching a filter (in the body or the query string), under the delete rule', description: 'Needs the delete method enabled and a filter that selects something by its form. The filter and options go in the body, or in the query string for clients that send no body with DELETE.', params: RecordParams, querystring: BulkDeleteQuery, body: BulkDeleteRequest, response: RecordResponses.bulkDeleted }
  }, async (request) => {
    const { projectId, table } = request.params
    const params = request.body ?? { ...request.query, filter: request.query.filter ?? {} }
    return { success: true as const, data: await records.bulkDelete(projectId, table, requestCaller(request), params) }
  })

  await app.register(fileRoutes)
}

export default dataRoutes
