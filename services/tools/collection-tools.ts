import { Type } from '@sinclair/typebox'
import { Collection } from '../../schemas/collections.js'
import { collectionSchemas } from '../../schemas/collection-definitions.js'
import { DataRecord, QueryBody, RecordBody, RecordIdParams, RecordParams } from '../../schemas/records.js'
import { inlineRefs } from './inline-refs.js'
import type { ToolDefinition } from './registry.js'
import type { ProjectToolContext } from './project-tool-context.js'

// The route's path parameters as input members; the query or body as the very schema the route validates.
const table = RecordParams.properties.table
const id = RecordIdParams.properties.id
const ListPage = Type.Object({
  items: Type.Array(DataRecord),
  nextCursor: Type.Union([Type.String(), Type.Null()], { description: 'Pass as `query.cursor` for the next page; null only at the end' }),
  total: Type.Optional(Type.Integer())
})

type CollectionTool = ToolDefinition<any, any, ProjectToolContext>

/**
 * The project's data as tools: definitions as `GET …/collections` reads them,
 * records through the records service as the data API's routes call it, with
 * the caller resolved as the data API resolves a platform user
 * (`records.read` / `records.write`, checked by the service as for the route).
 * Record writes change what an app's users see: a person approves each one.
 */
export const COLLECTION_TOOLS: CollectionTool[] = [
  {
    name: 'collections_list',
    title: 'List collection definitions',
    description: 'The project\'s collections: their fields, indexes and the rule of each method.',
    permission: 'collections.read',
    risk: 'read',
    input: Type.Object({}, { additionalProperties: false }),
    output: inlineRefs(Type.Object({ items: Type.Array(Collection) }), collectionSchemas),
    run: async (c) => ({ items: await c.services.collections.definitions.list(c.projectId) })
  },
  {
    name: 'records_query',
    title: 'Query records',
    description: 'Records of a collection by a MongoDB-style `filter` over its fields, `sort`, `fields` and a `limit`, a page at a time: ' +
      'pass the answer\'s `nextCursor` as `query.cursor` for the next page.',
    permission: 'records.read',
    risk: 'read',
    input: Type.Object({ table, query: Type.Optional(QueryBody) }, { additionalProperties: false }),
    output: ListPage,
    run: async (c, input) => await c.services.collections.records.list(c.projectId, input.table, c.dataCaller, input.query ?? {})
  },
  {
    name: 'record_create',
    title: 'Create a record',
    description: 'A new record of a collection with the field values given; unknown fields are refused.',
    permission: 'records.write',
    risk: 'critical',
    input: Type.Object({ table, values: RecordBody }, { additionalProperties: false }),
    output: DataRecord,
    run: async (c, input) => await c.services.collections.records.create(c.projectId, input.table, c.dataCaller, input.values)
  },
  {
    name: 'record_update',
    title: 'Update a record',
    description: 'Changes the fields given of one record; with `ifVersion` only if the record is still at that version.',
    permission: 'records.write',
    risk: 'critical',
    input: Type.Object({
      table,
      id,
      values: RecordBody,
      ifVersion: Type.Optional(Type.Integer({ minimum: 0, description: 'The record\'s `version` as last read, as If-Match on the route' }))
    }, { additionalProperties: false }),
    output: DataRecord,
    run: async (c, input) => await c.services.collections.records.update(c.projectId, input.table, c.dataCaller, input.id, input.values, input.ifVersion)
  }
]
