import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import {
  BulkDeleteQuery, BulkDeleteRequest, BulkUpdateBody, GetQuery, IfMatchHeaders, ListQuery, QueryBody, RecordBody, RecordIdParams,
  RecordParams, RecordResponses
} from '../../schemas/records.js'
import { collectionErrors as c } from '../../services/collections/errors.js'
import { commonErrors } from '../../services/platform/errors.js'
import fileRoutes from './files.js'
import { allowEnabledMethods } from './allowed-methods.js'
import { created, deleted, ok } from '../replies.js'
import { ifMatch } from '../conditional.js'

const tags = ['data']

/** What every data route may meet: the project, the collection, the method enabled on it and the method's rule. */
const EVERY = [commonErrors.projectNotFound, c.collectionNotFound, c.methodDisabled, commonErrors.forbidden]
/** A page of records: the filter, sort, selection and cursor the caller sends. */
const LIST = [c.invalidFilter, c.invalidSort, c.invalidFields, c.scanLimit, commonErrors.invalidCursor]
/** The values a write sets, checked against the fields and the method's rule. */
const VALUES = [c.invalidField, c.unknownField, c.readonlyField, c.invalidRelation, c.ruleCheckFailed, c.duplicateValue]
/** One record, by id, optionally at the If-Match version. */
const CONDITIONAL = [commonErrors.invalidIfMatch, c.recordNotFound, c.versionMismatch]
/** The records a bulk write selects. */
const BULK = [c.invalidFilter, c.filterRequired, c.tooManyAffected]

/**
 * `/api/p/:projectId/:table`: the collection endpoints. Each method answers
 * under its own rule; the caller may be anonymous, an end user or a platform
 * admin (`auth: 'data'` works out which, `request.caller.data`), and the rule
 * decides, so no route declares a permission.
 */
const dataRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { records } = app
  app.routeDefaults({ auth: 'data', errors: EVERY })
  allowEnabledMethods(app)

  app.get('/:table', {
    config: { collectionMethod: 'list', fastJson: true, errors: LIST },
    schema: {
      operationId: 'listRecords',
      tags,
      summary: 'List records the caller\'s rule lets it see: filter, sort, cursor or offset pages, field selection',
      description: 'Under the collection\'s list rule. `filter` is MongoDB-style JSON over the collection\'s fields; ' +
        'pages follow `nextCursor` (or `offset`); `fields` selects what is returned; `count` adds the total.',
      params: RecordParams,
      querystring: ListQuery,
      response: RecordResponses.list
    }
  }, async (request) => {
    const { projectId, table } = request.params
    return ok(await records.list(projectId, table, request.caller.data, request.query))
  })

  app.post('/:table/query', {
    config: { collectionMethod: 'list', fastJson: true, errors: LIST },
    schema: {
      operationId: 'queryRecords',
      tags,
      summary: 'List records with the filter in the body, for filters too long for a URL',
      description: 'The same as listing, with the query in the body; under the list rule.',
      params: RecordParams,
      body: QueryBody,
      response: RecordResponses.list
    }
  }, async (request) => {
    const { projectId, table } = request.params
    return ok(await records.list(projectId, table, request.caller.data, request.body))
  })

  app.get('/:table/:id', {
    config: { collectionMethod: 'get', errors: [c.recordNotFound, c.invalidFields] },
    schema: {
      operationId: 'getRecord',
      tags,
      summary: 'One record, if the get rule lets the caller see it',
      description: 'Under the collection\'s get rule; a record outside it is 404. The answer\'s ETag is the record\'s version.',
      params: RecordIdParams,
      querystring: GetQuery,
      response: RecordResponses.one
    }
  }, async (request, reply) => {
    const { projectId, table, id } = request.params
    const record = await records.get(projectId, table, request.caller.data, id, request.query.fields)
    if (typeof record.version === 'number') void reply.header('etag', `"${record.version}"`)
    return ok(record)
  })

  app.post('/:table', {
    config: { collectionMethod: 'create', errors: [...VALUES, c.fieldRequired] },
    schema: {
      operationId: 'createRecord',
      tags,
      summary: 'Create a record',
      description: 'Under the collection\'s create rule. Unknown fields are refused, never dropped. Location names the new record ' +
        'and ETag its version.',
      params: RecordParams,
      body: RecordBody,
      response: RecordResponses.created
    }
  }, async (request, reply) => {
    const { projectId, table } = request.params
    const record = await records.create(projectId, table, request.caller.data, request.body)
    const answer = created(reply, record)
    void reply.header('etag', `"${String(record.version)}"`)
    return answer
  })

  app.put('/:table/:id', {
    config: { collectionMethod: 'update', errors: [...VALUES, ...CONDITIONAL, c.writeConflict] },
    schema: {
      operationId: 'updateRecord',
      tags,
      summary: 'Change the fields given; with If-Match only if the record is still at that version (412 otherwise)',
      description: 'Under the collection\'s update rule. Only the fields given change. Clearing a file field (`null`, or `[]` on a ' +
        'multiple one) deletes its files, so it needs the fileDelete rule too (403 otherwise). With `If-Match` the change applies ' +
        'only if the record is still at that version (412 otherwise).',
      params: RecordIdParams,
      headers: IfMatchHeaders,
      body: RecordBody,
      response: RecordResponses.updated
    }
  }, async (request, reply) => {
    const { projectId, table, id } = request.params
    const version = ifMatch(request)
    const record = await records.update(projectId, table, request.caller.data, id, request.body, version)
    void reply.header('etag', `"${String(record.version)}"`)
    return ok(record)
  })

  app.delete('/:table/:id', {
    config: { collectionMethod: 'delete', errors: CONDITIONAL },
    schema: {
      operationId: 'deleteRecord',
      tags,
      summary: 'Delete a record and its files',
      description: 'Under the collection\'s delete rule; `If-Match` as on update. The record\'s files go with it.',
      params: RecordIdParams,
      headers: IfMatchHeaders,
      response: RecordResponses.deleted
    }
  }, async (request) => {
    const { projectId, table, id } = request.params
    await records.delete(projectId, table, request.caller.data, id, ifMatch(request))
    return deleted(id)
  })

  app.patch('/:table', {
    config: { collectionMethod: 'update', errors: [...VALUES, ...BULK, c.emptyUpdate] },
    schema: {
      operationId: 'bulkUpdateRecords',
      tags,
      summary: 'Set fields on every record matching a filter, under the update rule',
      description: 'The update method must be enabled, and the filter must select something by its form. Clearing a file field ' +
        'deletes its files: the fileDelete rule must allow it on every matched record (403 otherwise, nothing changed). ' +
        '`dryRun` only counts; more matches than `maxAffected` change nothing (409).',
      params: RecordParams,
      body: BulkUpdateBody,
      response: RecordResponses.bulkUpdated
    }
  }, async (request) => {
    const { projectId, table } = request.params
    return ok(await records.bulkUpdate(projectId, table, request.caller.data, request.body))
  })

  app.delete('/:table', {
    config: { collectionMethod: 'delete', errors: BULK },
    schema: {
      operationId: 'bulkDeleteRecords',
      tags,
      summary: 'Delete every record matching a filter (in the body or the query string), under the delete rule',
      description: 'The delete method must be enabled, and the filter must select something by its form. The filter and options ' +
        'go in the body, or in the query string for clients that send no body with DELETE.',
      params: RecordParams,
      querystring: BulkDeleteQuery,
      body: BulkDeleteRequest,
      response: RecordResponses.bulkDeleted
    }
  }, async (request) => {
    const { projectId, table } = request.params
    const params = request.body ?? { ...request.query, filter: request.query.filter ?? {} }
    return ok(await records.bulkDelete(projectId, table, request.caller.data, params))
  })

  await app.register(fileRoutes)
}

export default dataRoutes
