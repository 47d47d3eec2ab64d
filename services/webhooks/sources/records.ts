import { readDeny } from '../../collections/access.js'
import { parseFilter } from '../../collections/filters.js'
import { fieldMap, SYSTEM_FIELDS, toApiRecord } from '../../collections/record-fields.js'
import type { DataCollection } from '../../collections/records.js'
import { commonErrors } from '../../platform/errors.js'
import { compileFilter as storePredicate } from '../../store/semantics/match.js'
import type { Document, Filter } from '../../store/types.js'
import type { FieldChanges, WebhookActor } from '../records.js'
import type { WebhookEventInput, WebhookSource } from '../source.js'

/**
 * Record webhooks (issue 33) as a source: created, updated and deleted
 * events of chosen collections, an optional filter in the Store filter
 * syntax, and a field mask. Fields the collection's read rules deny never
 * leave, whatever the mask says, judged when each delivery is sent.
 */

export const RECORDS_WEBHOOK_SOURCE = 'records'
export const RECORD_WEBHOOK_EVENTS = ['record.created', 'record.updated', 'record.deleted'] as const
export type RecordWebhookType = typeof RECORD_WEBHOOK_EVENTS[number]

/** A record webhook's filter as stored. */
export interface RecordWebhookFilter {
  collections: string[]
  /** A Store filter every chosen collection understands; null for every record. */
  where: Filter | null
  /** The fields sent (besides id and the system fields); null for all the read rules allow. */
  fields: string[] | null
}

const invalid = (path: string, message: string) => commonErrors.validationFailed({ fields: [{ path, message }] })
const MAX_COLLECTIONS = 50

/** The stored record as filters read it: everything but what no API answer shows. */
function matchable (record: Document): Document {
  const { passwordHash: _hash, sessionEpoch: _epoch, ...rest } = record
  return rest
}

/** The fields whose values differ between two stored forms of a record, system fields aside. */
function changedFields (before: Document, after: Document): FieldChanges {
  const changes: FieldChanges = {}
  for (const name of new Set([...Object.keys(before), ...Object.keys(after)])) {
    if (name === '_id' || SYSTEM_FIELDS.has(name)) continue
    if (JSON.stringify(before[name] ?? null) !== JSON.stringify(after[name] ?? null)) changes[name] = { from: before[name] ?? null, to: after[name] ?? null }
  }
  return changes
}

/**
 * The event of one record write. Its key is the record and the version the
 * write made (a delete: `deleted`), which every write's condition on the
 * version makes unique; `before` is the record as the write found it.
 */
export function recordEvent (input: { collection: string, type: RecordWebhookType, record: Document, before?: Document | null, actor: WebhookActor | null, at: Date }): WebhookEventInput {
  const { collection, type, record } = input
  const version = type === 'record.deleted' ? 'deleted' : `v${String(record.version ?? 0)}`
  return {
    key: `${collection}:${String(record._id)}:${version}`,
    type,
    occurredAt: input.at,
    actor: input.actor,
    data: { collection, record: toApiRecord(record, new Set()) },
    changes: type === 'record.updated' && input.before != null ? changedFields(input.before, record) : null,
    matchOn: { collection, record: matchable(record) }
  }
}

export interface RecordsSourceDeps {
  /** A collection's definition, or null when the project has none of that name. */
  collection: (projectId: string, name: string) => Promise<DataCollection | null>
  /** Publishes again what the record change feed holds since `since` in the `owners` projects (see docs/webhooks.md, "Record webhooks"). */
  republish?: (since: Date, owners: readonly string[]) => Promise<void>
  /** Starts the project's record change feed before its first record webhook is saved. */
  beforeSubscribe?: (projectId: string) => Promise<void>
}

export function recordsWebhookSource (deps: RecordsSourceDeps): WebhookSource {
  return {
    name: RECORDS_WEBHOOK_SOURCE,
    eventTypes: RECORD_WEBHOOK_EVENTS,
    checkFilter: async (projectId, raw, path): Promise<RecordWebhookFilter> => {
      if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw invalid(path, 'must be an object: { collections, where?, fields? }')
      const { collections, where, fields } = raw as { collections?: unknown, where?: unknown, fields?: unknown }
      if (!Array.isArray(collections) || collections.length === 0 || collections.length > MAX_COLLECTIONS || !collections.every((name) => typeof name === 'string')) throw invalid(`${path}.collections`, `must list 1 to ${MAX_COLLECTIONS} collection names`)
      if (fields !== undefined && fields !== null && !(Array.isArray(fields) && fields.every((name) => typeof name === 'string'))) throw invalid(`${path}.fields`, 'must be a list of field names')
      let parsed: Filter | null = null
      for (const [index, name] of (collections as string[]).entries()) {
        const definition = await deps.collection(projectId, name)
        if (definition === null) throw invalid(`${path}.collections[${index}]`, `no collection "${name}" in the project`)
        const known = fieldMap(definition.fields)
        const deny = readDeny(definition.methods)
        // A filter on a denied field would tell its value one delivery at a time.
        if (where !== undefined && where !== null) parsed = parseFilter(where, known, deny)
        for (const field of (fields ?? []) as string[]) {
          if (!known.has(field) || deny.has(field)) throw invalid(`${path}.fields`, `"${field}" is not a readable field of ${name}`)
        }
      }
      return { collections: [...new Set(collections as string[])], where: parsed, fields: (fields ?? null) as string[] | null }
    },
    matches: (subscription, event) => {
      const filter = subscription.filter as RecordWebhookFilter
      const { collection, record } = (event.matchOn ?? {}) as { collection?: string, record?: Document }
      if (collection === undefined || record === undefined || !filter.collections.includes(collection)) return false
      return filter.where === null || storePredicate(filter.where)(record)
    },
    render: async (subscription, event) => {
      const filter = subscription.filter as RecordWebhookFilter | null
      const { collection, record } = event.data as { collection: string, record: Document }
      const definition = await deps.collection(event.projectId, collection)
      const deny = definition === null ? new Set<string>() : readDeny(definition.methods)
      const shown = (name: string): boolean => name === 'id' || SYSTEM_FIELDS.has(name) || (!deny.has(name) && (filter?.fields == null || filter.fields.includes(name)))
      const changes = event.changes === null ? null : Object.fromEntries(Object.entries(event.changes).filter(([name]) => shown(name)))
      return { data: { collection, record: Object.fromEntries(Object.entries(record).filter(([name]) => shown(name))) }, changes }
    },
    sample: (_projectId, type) => ({
      key: 'sample',
      type,
      occurredAt: new Date(),
      actor: { type: 'user', id: 'sample-user' },
      data: { collection: 'posts', record: { id: 'sample-record', title: 'A sample record', createdAt: new Date(0).toISOString(), updatedAt: new Date(0).toISOString(), version: 1 } },
      changes: type === 'record.updated' ? { title: { from: 'A draft', to: 'A sample record' } } : null
    }),
    ...(deps.republish === undefined ? {} : { republish: deps.republish }),
    ...(deps.beforeSubscribe === undefined ? {} : { beforeSubscribe: deps.beforeSubscribe })
  }
}
