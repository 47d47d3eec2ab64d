import { resolveAccess, NO_FIELDS, type Access, type DataCaller } from '../collections/access.js'
import { parseFilter } from '../collections/filters.js'
import { fieldMap } from '../collections/record-fields.js'
import type { DataCollection } from '../collections/records.js'
import { collectionErrors } from '../collections/errors.js'
import type { Clock } from '../platform/clock.js'
import { compileFilter } from '../store/semantics/match.js'
import type { Document, Filter } from '../store/types.js'
import { realtimeErrors } from './errors.js'

/** One subscription as a client asks for it. */
export interface SubscriptionRequest { collection: string, record?: string, filter?: unknown }

/** One subscription as checked: a record subscription answers under the get rule, a collection's under list. */
export interface Subscription { collection: string, record: string | null, filter: Filter | null }

export type FindCollection = (projectId: string, name: string) => Promise<DataCollection | null>

/** Reads the `subscriptions` query parameter: a JSON list of { collection, record?, filter? }. */
export function parseSubscriptionList (raw: string, limit: number): SubscriptionRequest[] {
  let value: unknown
  try {
    value = JSON.parse(raw)
  } catch {
    throw realtimeErrors.invalidSubscription({ path: 'querystring.subscriptions', why: 'is not JSON' })
  }
  if (!Array.isArray(value) || value.length === 0) throw realtimeErrors.invalidSubscription({ path: 'querystring.subscriptions', why: 'must be a non-empty JSON list' })
  if (value.length > limit) throw realtimeErrors.tooManySubscriptions({ limit })
  return value.map((item: unknown, index): SubscriptionRequest => {
    const path = `querystring.subscriptions[${index}]`
    if (typeof item !== 'object' || item === null || Array.isArray(item)) throw realtimeErrors.invalidSubscription({ path, why: 'must be an object { collection, record?, filter? }' })
    const { collection, record, filter, ...rest } = item as Record<string, unknown>
    const extra = Object.keys(rest)[0]
    if (extra !== undefined) throw realtimeErrors.invalidSubscription({ path: `${path}.${extra}`, why: 'is not a subscription property' })
    if (typeof collection !== 'string' || collection === '') throw realtimeErrors.invalidSubscription({ path: `${path}.collection`, why: 'must name a collection' })
    if (record !== undefined && (typeof record !== 'string' || record === '')) throw realtimeErrors.invalidSubscription({ path: `${path}.record`, why: 'must be a record id' })
    return { collection, ...(record === undefined ? {} : { record: record as string }), ...(filter === undefined ? {} : { filter }) }
  })
}

/**
 * Checks a subscription as the data API would check the read it stands for:
 * the collection exists, the caller's get or list rule lets it call that
 * method (refused as the data API refuses), and the filter names only fields
 * the rule lets it see.
 */
export async function checkSubscription (projectId: string, request: SubscriptionRequest, caller: DataCaller, deps: { findCollection: FindCollection, clock: Clock }): Promise<Subscription> {
  const definition = await deps.findCollection(projectId, request.collection)
  if (definition === null) throw collectionErrors.collectionNotFound()
  const method = request.record === undefined ? 'list' : 'get'
  const access = resolveAccess(method, definition.methods[method], caller, deps.clock)
  const filter = request.filter === undefined ? null : parseFilter(request.filter, fieldMap(definition.fields), access.deny)
  return { collection: request.collection, record: request.record ?? null, filter }
}

/**
 * What the subscriber may see of a stored record under one subscription,
 * with the rule as it stands now: null when the rule would not let it read
 * the record (or the method is refused it), else the fields the rule denies.
 */
export function visibleUnder (subscription: Subscription, definition: DataCollection, caller: DataCaller, record: Document, clock: Clock): ReadonlySet<string> | null {
  if (subscription.record !== null && record._id !== subscription.record) return null
  const method = subscription.record === null ? 'list' : 'get'
  let access: Access
  try {
    access = resolveAccess(method, definition.methods[method], caller, clock, NO_FIELDS)
  } catch {
    return null
  }
  if (access.filter !== null && !compileFilter(access.filter)(record)) return null
  if (subscription.filter !== null && !compileFilter(subscription.filter)(record)) return null
  return access.deny
}
