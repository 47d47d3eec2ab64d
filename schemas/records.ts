import { Type } from '@sinclair/typebox'
import { Envelope, ETAG, LOCATION, withHeaders } from './envelope.js'
import { DateTime, Deleted } from './common.js'

/**
 * The data API's query limits, the one place they are set: the schemas below
 * refuse what the validator can see, the services the rest (depth, clauses,
 * sort keys), and the contract publishes them.
 */
export const QUERY_LIMITS = {
  maxFilterBytes: 4096,
  maxDepth: 6,
  maxClauses: 64,
  maxInValues: 100,
  maxRegexLength: 256,
  defaultLimit: 30,
  maxLimit: 200,
  maxOffset: 10_000,
  maxSortKeys: 4,
  maxAffected: 10_000,
  /**
   * Records one list page may examine, in the list's order after its cursor,
   * when no index serves its filter: the page holds the matches among them,
   * however few, and nextCursor continues after the last one examined. It
   * sets how long one page may hold the event loop (about 0.1 ms of SQLite
   * work here, less when the window's documents are cached: see
   * docs/store.md), not how fast records come: per record examined the cost
   * is the same at any bound. At 2.5 times maxLimit a filter matching 40% still
   * fills the largest page.
   */
  maxExamined: 500
} as const

const QUERY_LIMIT_TEXT = 'Filters: MongoDB-style JSON over the collection\'s fields (id, createdAt, updatedAt included) with $eq $ne $gt $gte $lt $lte $in $nin $exists $regex $options $not $elemMatch $all $size $and $or $nor; ' +
  `at most ${QUERY_LIMITS.maxFilterBytes} bytes, ${QUERY_LIMITS.maxDepth} levels, ${QUERY_LIMITS.maxClauses} clauses, ${QUERY_LIMITS.maxInValues} values per $in/$nin/$all, regex ${QUERY_LIMITS.maxRegexLength} characters.`

export const DataRecord = Type.Object({
  id: Type.String(),
  createdAt: Type.Optional(DateTime),
  updatedAt: Type.Optional(DateTime),
  version: Type.Optional(Type.Integer({ description: 'Increases with every write; send it back in If-Match to avoid overwriting someone else\'s change' }))
}, { $id: 'DataRecord', additionalProperties: true, description: 'A record: its fields beside id, createdAt, updatedAt and version' })

export const RecordParams = Type.Object({
  projectId: Type.String({ pattern: '^[0-9A-Za-z_-]{1,64}$' }),
  table: Type.String({ pattern: '^(_users|[a-z][a-z0-9_]{0,62})$' })
})
export const RecordIdParams = Type.Object({ ...RecordParams.properties, id: Type.String({ pattern: '^[0-9A-Za-z_-]{1,64}$' }) })

const ListOptions = {
  sort: Type.Optional(Type.String({ maxLength: 300, description: `Comma-separated fields (at most ${QUERY_LIMITS.maxSortKeys}), \`-\` for descending; id breaks ties` })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: QUERY_LIMITS.maxLimit, default: QUERY_LIMITS.defaultLimit })),
  offset: Type.Optional(Type.Integer({ minimum: 0, maximum: QUERY_LIMITS.maxOffset, description: 'Skip this many; cursors are faster and stable under writes' })),
  cursor: Type.Optional(Type.String({ maxLength: 2048, description: 'nextCursor of the previous page' })),
  fields: Type.Optional(Type.String({ maxLength: 2000, description: 'Comma-separated fields to return (id always)' })),
  count: Type.Optional(Type.Boolean({ description: 'Also count every matching record (costs a second query)' }))
}

export const ListQuery = Type.Object({
  filter: Type.Optional(Type.String({ maxLength: QUERY_LIMITS.maxFilterBytes, description: QUERY_LIMIT_TEXT })),
  ...ListOptions
}, { additionalProperties: false })

export const QueryBody = Type.Object({
  filter: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: QUERY_LIMIT_TEXT })),
  ...ListOptions
}, { additionalProperties: false })

export const GetQuery = Type.Object({ fields: ListOptions.fields }, { additionalProperties: false })

export const RecordBody = Type.Record(Type.String(), Type.Unknown(), { description: 'Field values; on update only the fields given change' })

const BulkOptions = {
  dryRun: Type.Optional(Type.Boolean({ description: 'Only count what would be affected' })),
  maxAffected: Type.Optional(Type.Integer({ minimum: 1, maximum: QUERY_LIMITS.maxAffected, description: 'Refuse (409, nothing changed) if more records match' }))
}
export const BulkUpdateBody = Type.Object({
  filter: Type.Record(Type.String(), Type.Unknown(), { description: 'At least one clause' }),
  set: RecordBody,
  ...BulkOptions
}, { additionalProperties: false })
export const BulkDeleteBody = Type.Object({
  filter: Type.Record(Type.String(), Type.Unknown(), { description: 'At least one clause' }),
  ...BulkOptions
}, { additionalProperties: false })

/** For clients that send no body with DELETE: the filter as JSON text and the options beside it. */
export const BulkDeleteQuery = Type.Object({
  filter: Type.Optional(Type.String({ maxLength: QUERY_LIMITS.maxFilterBytes })),
  ...BulkOptions
}, { additionalProperties: false })
export const BulkDeleteRequest = Type.Union([BulkDeleteBody, Type.Null()])

export const IfMatchHeaders = Type.Object({
  'if-match': Type.Optional(Type.String({ maxLength: 40, description: 'The version (or ETag) the change was based on' }))
})

const ListPage = Type.Object({
  items: Type.Array(Type.Ref(DataRecord)),
  nextCursor: Type.Union([Type.String(), Type.Null()], { description: `Where the next page starts; null only at the end. When no index serves the filter a page examines at most ${QUERY_LIMITS.maxExamined} visible records, so it may hold fewer items than limit (even none) while nextCursor is set: follow it until null` }),
  total: Type.Optional(Type.Integer())
})

export const RecordResponses = {
  list: { 200: Envelope(ListPage) },
  one: { 200: withHeaders(Envelope(Type.Ref(DataRecord)), ETAG) },
  created: { 201: withHeaders(Envelope(Type.Ref(DataRecord)), { ...LOCATION, ...ETAG }) },
  updated: { 200: withHeaders(Envelope(Type.Ref(DataRecord)), ETAG) },
  deleted: { 200: Envelope(Deleted) },
  bulkUpdated: { 200: Envelope(Type.Object({ matched: Type.Integer(), modified: Type.Integer(), dryRun: Type.Boolean() })) },
  bulkDeleted: { 200: Envelope(Type.Object({ matched: Type.Integer(), deleted: Type.Integer(), dryRun: Type.Boolean() })) }
}

export const recordSchemas = [DataRecord]
