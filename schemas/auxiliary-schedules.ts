import { Type, type Static, type TSchema } from '@sinclair/typebox'
import { DateTime, Deleted, Id } from './common.js'
import { Created, Envelope } from './envelope.js'

/**
 * Schedules of the auxiliary area (`/api/projects/:projectId/auxiliary/schedules`,
 * docs/auxiliary.md "Schedules"): bodies, answers and parameters.
 */

const PAGE_MAX = 100
const InProject = { projectId: Id }
export const ScheduleListParams = Type.Object(InProject)
export const ScheduleParams = Type.Object({ ...InProject, scheduleId: Id })
export const ScheduleRunParams = Type.Object({ ...InProject, scheduleId: Id, runId: Id })
export const ScheduleListQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: PAGE_MAX, default: 50 })),
  cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 2048, description: 'The `nextCursor` of the previous page of the same list' }))
}, { additionalProperties: false })

const CronTrigger = Type.Object({
  kind: Type.Literal('cron'),
  expression: Type.String({ minLength: 9, maxLength: 200, description: '5 fields (minute hour day month weekday) or 6 (seconds first), as cron reads them' }),
  timezone: Type.String({ minLength: 1, maxLength: 64, description: 'An IANA timezone (Europe/Berlin, UTC); DST as cron: a skipped local time fires once after the jump, a repeated one once' })
}, { additionalProperties: false })
const IntervalTrigger = Type.Object({
  kind: Type.Literal('interval'),
  everySeconds: Type.Integer({ minimum: 1, description: 'Fires this often, counted from the schedule\'s creation (or its last change of trigger); 60 at least' })
}, { additionalProperties: false })
export const Trigger = Type.Union([CronTrigger, IntervalTrigger], { description: 'When the schedule fires' })

const HEADER_NAME = '^(?![Pp][Ll][Ii][Nn][Tt][Hh]-)(?![Hh][Oo][Ss][Tt]$)(?![Cc][Oo][Nn][Tt][Ee][Nn][Tt]-[Ll][Ee][Nn][Gg][Tt][Hh]$)[A-Za-z0-9-]{1,64}$'
const HttpAction = Type.Object({
  type: Type.Literal('http'),
  method: Type.Union(['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].map((method) => Type.Literal(method))),
  url: Type.String({ minLength: 1, maxLength: 2048, description: 'An http(s) URL; internal addresses are refused unless the operator allows them (WEBHOOK_ALLOWED_HOSTS)' }),
  headers: Type.Optional(Type.Record(Type.String({ pattern: HEADER_NAME }), Type.String({ maxLength: 1024 }), { description: 'Sent as given; Host, Content-Length and Plinth-* are the server\'s', maxProperties: 20 })),
  body: Type.Optional(Type.Union([Type.String({ maxLength: 65_536 }), Type.Null()], { description: 'Sent as is after replacing `{{slot}}` (the slot\'s time, ISO 8601), `{{scheduleId}}` and `{{runId}}`; JSON by default' }))
}, { additionalProperties: false, description: 'An outbound HTTP call signed like a webhook: `Plinth-Signature: t=…,v1=…` over `t.rawBody` with the schedule\'s secret' })
const CollectionAction = Type.Object({
  type: Type.Literal('collection'),
  collection: Type.String({ minLength: 1, maxLength: 64 }),
  operation: Type.Union([Type.Literal('delete'), Type.Literal('update')]),
  filter: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: 'A Store filter in the data API\'s syntax' })),
  olderThanDays: Type.Optional(Type.Union([Type.Integer({ minimum: 0, maximum: 36_500 }), Type.Null()], { description: 'Only records created more than this many days before the slot' })),
  set: Type.Optional(Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()], { description: 'The fields an update sets' }))
}, { additionalProperties: false, description: 'A bulk delete or update of matching records, made as the schedule\'s user with the schedule\'s permissions (`records.write`)' })
export const ScheduleAction = Type.Union([HttpAction, CollectionAction])

const Settings = {
  name: Type.String({ minLength: 1, maxLength: 100 }),
  trigger: Trigger,
  enabled: Type.Optional(Type.Boolean({ description: 'Defaults to true' })),
  overlap: Type.Optional(Type.Union([Type.Literal('skip'), Type.Literal('queue')], { description: 'When a slot comes while the previous run still goes: `skip` records it skipped (the default), `queue` runs it after' })),
  timeoutSeconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 300, description: 'A run is failed past this; 30 by default' })),
  catchUp: Type.Optional(Type.Union([Type.Literal('once'), Type.Literal('skip')], { description: 'Slots missed while no server was up: run once on start (the default), or record them skipped' })),
  action: ScheduleAction,
  permissions: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { maxItems: 20, description: 'What the schedule may do when it runs (a collection action needs `records.write`); never more than the caller holds' }))
}
export const CreateScheduleBody = Type.Object(Settings, { additionalProperties: false })
export const UpdateScheduleBody = Type.Partial(Type.Object(Settings, { additionalProperties: false }), { additionalProperties: false, minProperties: 1 })
export type CreateScheduleBodyT = Static<typeof CreateScheduleBody>

export const Schedule = Type.Object({
  id: Type.String(),
  projectId: Type.String(),
  name: Type.String(),
  trigger: Trigger,
  enabled: Type.Boolean(),
  overlap: Type.String(),
  timeoutSeconds: Type.Integer(),
  catchUp: Type.String(),
  action: ScheduleAction,
  permissions: Type.Array(Type.String()),
  runAs: Type.String({ description: 'The platform user the schedule acts as: its creator, or who last changed its action or permissions' }),
  nextFires: Type.Array(DateTime, { description: 'The next five fire times, so a person can check the expression' }),
  createdAt: DateTime,
  updatedAt: DateTime
})
export const ScheduleWithSecret = Type.Object({
  schedule: Schedule,
  secret: Type.String({ description: 'Signs the HTTP action\'s calls; shown this once' })
})
export const ScheduleRun = Type.Object({
  id: Type.String(),
  scheduleId: Type.String(),
  slot: DateTime,
  trigger: Type.Union(['slot', 'catch-up', 'missed', 'manual'].map((value) => Type.Literal(value))),
  status: Type.Union(['running', 'succeeded', 'failed', 'skipped'].map((value) => Type.Literal(value))),
  startedAt: DateTime,
  finishedAt: Type.Union([DateTime, Type.Null()]),
  durationMs: Type.Union([Type.Integer(), Type.Null()]),
  output: Type.Union([Type.String(), Type.Null()], { description: 'What the action answered, cut to 1,000 characters' }),
  error: Type.Union([Type.String(), Type.Null()])
})

const Page = <T extends TSchema>(item: T) => Type.Object({
  items: Type.Array(item),
  nextCursor: Type.Union([Type.String(), Type.Null()], { description: 'Pass as `cursor` for the next page; null on the last page' })
})

export const ScheduleResponses = {
  list: { 200: Envelope(Page(Schedule)) },
  created: { 201: Created(ScheduleWithSecret) },
  rotated: { 200: Envelope(ScheduleWithSecret) },
  schedule: { 200: Envelope(Schedule) },
  deleted: { 200: Envelope(Deleted) },
  ran: { 201: Created(ScheduleRun) },
  runList: { 200: Envelope(Page(ScheduleRun)) },
  run: { 200: Envelope(ScheduleRun) }
}
