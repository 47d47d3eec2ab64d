import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import {
  BulkDeleteBody, BulkUpdateBody, GetQuery, IfMatchHeaders, ListQuery, QueryBody, RecordBody, RecordIdParams, RecordParams, RecordResponses
} from '../../schemas/records.js'
import { badRequest } from '../../services/errors.js'
import fileRoutes from './files.js'

const tags = ['data']
// An end user's project JWT, a platform credential, or nothing where a rule is public.
const security: Array<Record<string, string[]>> = [{ projectAuth: [] }, { platformAuth: [] }, {}]

/** `If-Match: "3"`, `W/"3"` or `3` → 3. */
function ifMatchVersion (header: string | undefined): number | undefined {
  if (header === undefined) return undefined
  const match = /^(?:W\/)?"?(\d{1,15})"?$/.exec(header.trim())
  if (match === null) throw badRequest('APP_INVALID_IF_MATCH', 'If-Match must be a record version such as "3"')
  return Number(match[1])
}

const BulkDeleteQuery = Type.Object({
  filter: Type.Optional(Type.String({ maxLength: 4096 })),
  dryRun: Type.Optional(Type.Boolean()),
  maxAffected: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000 }))
}, { additionalProperties: false })

/**
 * `/api/p/:projectId/:table`: the collection endpoints. Each method answers
 * under its own rule; the caller may be anonymous, an end user or a platform
 * admin, so authentication happens per call, not in an onRequest guard.
 */
const dataRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { records } = app

  app.get('/:table', {
    config: { fastJson: true },
    schema: { operationId: 'listRecords', tags, summary: 'List records the caller\'s rule lets it see: filter, sort, cursor or offset pages, field selection', security, params: RecordParams, querystring: ListQuery, response: RecordResponses.list }
  }, async (request) => {
    const { projectId, table } = request.params
    return { success: true as const, data: await records.list(projectId, table, await app.dataCaller(request), request.query) }
  })

  app.post('/:table/query', {
    config: { fastJson: true },
    schema: { operationId: 'queryRecords', tags, summary: 'List records with the filter in the body, for filters too long for a URL', security, params: RecordParams, body: QueryBody, response: RecordResponses.list }
  }, async (request) => {
    const { projectId, table } = request.params
    return { success: true as const, data: await records.list(projectId, table, await app.dataCaller(request), request.body) }
  })

  app.get('/:table/:id', {
    schema: { operationId: 'getRecord', tags, summary: 'One record, if the get rule lets the caller see it', security, params: RecordIdParams, querystring: GetQuery, response: RecordResponses.one }
  }, async (request, reply) => {
    const { projectId, table, id } = request.params
    const record = await records.get(projectId, table, await app.dataCaller(request), id, request.query.fields)
    if (typeof record.version === 'number') void reply.header('etag', `"${record.version}"`)
    return { success: true as const, data: record }
  })

  app.post('/:table', {
    schema: { operationId: 'createRecord', tags, summary: 'Create a record', security, params: RecordParams, body: RecordBody, response: RecordResponses.created }
  }, async (request, reply) => {
    const { projectId, table } = request.params
    const record = await records.create(projectId, table, await app.dataCaller(request), request.body)
    return reply.code(201).header('etag', `"${String(record.version)}"`).send({ success: true as const, data: record })
  })

  app.put('/:table/:id', {
    schema: { operationId: 'updateRecord', tags, summary: 'Change the fields given; with If-Match only if the record is still at that version (412 otherwise)', security, params: RecordIdParams, headers: IfMatchHeaders, body: RecordBody, response: RecordResponses.updated }
  }, async (request, reply) => {
    const { projectId, table, id } = request.params
    const record = await records.update(projectId, table, await app.dataCaller(request), id, request.body, ifMatchVersion(request.headers['if-match']))
    return reply.header('etag', `"${String(record.version)}"`).send({ success: true as const, data: record })
  })

  app.delete('/:table/:id', {
    schema: { operationId: 'deleteRecord', tags, summary: 'Delete a record and its files', security, params: RecordIdParams, headers: IfMatchHeaders, response: RecordResponses.deleted }
  }, async (request) => {
    const { projectId, table, id } = request.params
    await records.delete(projectId, table, await app.dataCaller(request), id, ifMatchVersion(request.headers['if-match']))
    return { success: true as const, data: { id, deleted: true as const } }
  })

  app.patch('/:table', {
    schema: { operationId: 'bulkUpdateRecords', tags, summary: 'Set fields on every record matching a filter, under the update rule', security, params: RecordParams, body: BulkUpdateBody, response: RecordResponses.bulkUpdated }
  }, async (request) => {
    const { projectId, table } = request.params
    return { success: true as const, data: await records.bulkUpdate(projectId, table, await app.dataCaller(request), request.body) }
  })

  app.delete('/:table', {
    schema: { operationId: 'bulkDeleteRecords', tags, summary: 'Delete every record matching a filter (in the body or the query string), under the delete rule', security, params: RecordParams, querystring: BulkDeleteQuery, body: Type.Union([BulkDeleteBody, Type.Null()]), response: RecordResponses.bulkDeleted }
  }, async (request) => {
    const { projectId, table } = request.params
    const params = request.body ?? { ...request.query, filter: request.query.filter ?? {} }
    return { success: true as const, data: await records.bulkDelete(projectId, table, await app.dataCaller(request), params) }
  })

  await app.register(fileRoutes)
}

export default dataRoutes
