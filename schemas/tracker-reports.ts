import { Type, type Static } from '@sinclair/typebox'
import { DateTime, Deleted, Id } from './common.js'
import { Envelope } from './envelope.js'

/**
 * The tracker's exports and analytics (issue 31, "Exports and analytics"):
 * exports are jobs that write the matching work items to a file downloaded
 * through a signed link; analytics count and sum them by a dimension.
 */

export const EXPORT_LIMITS = {
  /** How long a download link lasts once made. */
  linkSeconds: 15 * 60,
  /** Exports (with their files) are cleaned up this long after they finish. */
  retentionDays: 7,
  /** The most items one export writes; a larger project is exported with a filter, in parts. */
  maxItems: 100_000,
  pageDefault: 20,
  pageMax: 100
} as const

export const EXPORT_FORMATS = ['csv', 'json', 'xlsx'] as const
export const EXPORT_STATUSES = ['queued', 'processing', 'completed', 'failed'] as const
export type ExportFormatT = typeof EXPORT_FORMATS[number]
export type ExportStatusT = typeof EXPORT_STATUSES[number]

const ExportFormat = Type.Union(EXPORT_FORMATS.map((format) => Type.Literal(format)), { description: '`csv` (UTF-8, a header row), `json`, or `xlsx` (a "Work items" sheet, and a "Comments" sheet when asked)' })

export const CreateExportBody = Type.Object({
  lpId: Id,
  format: ExportFormat,
  filter: Type.Optional(Type.Union([Type.Unknown({ description: 'A TrackerFilter: only the items it matches' }), Type.Null()])),
  comments: Type.Optional(Type.Boolean({ default: false, description: 'Write each item\'s comments too' }))
}, { additionalProperties: false })

export const TrackerExport = Type.Object({
  id: Type.String(),
  lpId: Type.String({ description: 'The tracker project exported' }),
  format: ExportFormat,
  filter: Type.Unknown({ description: 'The TrackerFilter as given; null for every item the caller sees' }),
  comments: Type.Boolean(),
  status: Type.Union(EXPORT_STATUSES.map((status) => Type.Literal(status))),
  itemCount: Type.Union([Type.Integer(), Type.Null()], { description: 'Items written, once completed' }),
  size: Type.Union([Type.Integer(), Type.Null()], { description: 'The file\'s bytes, once completed' }),
  error: Type.Union([Type.String(), Type.Null()], { description: 'Why it failed' }),
  createdAt: DateTime,
  finishedAt: Type.Union([DateTime, Type.Null()]),
  expiresAt: Type.Union([DateTime, Type.Null()], { description: 'When the export and its file are cleaned up' }),
  download: Type.Union([Type.Object({
    url: Type.String({ description: 'A signed link to the file, needing no credential until it expires' }),
    expiresAt: DateTime
  }), Type.Null()], { description: `A fresh signed link (valid ${EXPORT_LIMITS.linkSeconds / 60} minutes) on a completed export` })
}, { $id: 'TrackerExport' })

export const ExportParams = Type.Object({ projectId: Id, exportId: Id })
export const ExportDownloadQuery = Type.Object({
  expires: Type.Integer({ minimum: 0, description: 'When the link expires, unix seconds' }),
  signature: Type.String({ minLength: 1, maxLength: 128 })
}, { additionalProperties: false })
export const ExportListQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: EXPORT_LIMITS.pageMax, default: EXPORT_LIMITS.pageDefault })),
  cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 2048 }))
}, { additionalProperties: false })

// ---------------------------------------------------------------- analytics

export const ANALYTICS_DIMENSIONS = ['state', 'stateGroup', 'label', 'assignee', 'priority', 'estimate', 'cycle', 'module', 'createdBy', 'createdAt', 'completedAt'] as const
export type AnalyticsDimensionT = typeof ANALYTICS_DIMENSIONS[number]
const Dimension = Type.Union(ANALYTICS_DIMENSIONS.map((dimension) => Type.Literal(dimension)), {
  description: 'What to group by: a field (`label`, `assignee` and `module` count an item once under each of its values) or a date (`createdAt`, `completedAt`) bucketed by `interval`'
})

export const AnalyticsQuery = Type.Object({
  lpId: Id,
  groupBy: Dimension,
  segment: Type.Optional(Dimension),
  interval: Type.Optional(Type.Union([Type.Literal('week'), Type.Literal('month')], { default: 'week', description: 'The bucket of a date dimension; weeks start on Monday, in the tracker project\'s timezone' })),
  filter: Type.Optional(Type.String({ maxLength: 8_192, description: 'A TrackerFilter as JSON' }))
}, { additionalProperties: false })

const Bucket = Type.Union([Type.String(), Type.Null()], { description: 'The value (an id, a priority, a point value, or the bucket\'s first day `YYYY-MM-DD`); null for none' })
export const AnalyticsGroup = Type.Object({
  value: Bucket,
  count: Type.Integer(),
  points: Type.Number({ description: 'The sum of the items\' estimates (points or minutes); 0 where none' }),
  segments: Type.Optional(Type.Array(Type.Object({ value: Bucket, count: Type.Integer(), points: Type.Number() })))
})

export const AnalyticsResult = Type.Object({
  groupBy: Dimension,
  segment: Type.Union([Dimension, Type.Null()]),
  total: Type.Object({ count: Type.Integer(), points: Type.Number() }),
  groups: Type.Array(AnalyticsGroup)
}, { $id: 'TrackerAnalytics' })

export const trackerReportSchemas = [TrackerExport, AnalyticsResult]
export type CreateExportBodyT = Static<typeof CreateExportBody>
export type TrackerExportT = Static<typeof TrackerExport>
export type AnalyticsQueryT = Static<typeof AnalyticsQuery>
export type AnalyticsResultT = Static<typeof AnalyticsResult>
export type AnalyticsGroupT = Static<typeof AnalyticsGroup>

const FileBytes = { schema: { type: 'string', format: 'binary' } }
export const ExportResponses = {
  export: { 200: Envelope(Type.Ref(TrackerExport)) },
  created: { 202: Envelope(Type.Ref(TrackerExport)) },
  list: { 200: Envelope(Type.Object({ items: Type.Array(Type.Ref(TrackerExport)), nextCursor: Type.Union([Type.String(), Type.Null()]) })) },
  deleted: { 200: Envelope(Deleted) },
  file: {
    200: {
      description: 'The export\'s file',
      headers: {
        'Content-Disposition': { type: 'string', description: '`attachment`, with the file\'s name' },
        'Content-Length': { type: 'integer', description: 'Bytes in the file' }
      },
      content: { 'text/csv': FileBytes, 'application/json': FileBytes, 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': FileBytes }
    }
  }
}
export const AnalyticsResponses = { report: { 200: Envelope(Type.Ref(AnalyticsResult)) } }
