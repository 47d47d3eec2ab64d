import { commonErrors } from '../platform/errors.js'
import { collectionErrors } from './errors.js'
import type { Filter } from '../store/types.js'
import { compileFilter } from '../store/semantics/match.js'
import type { AccessRuleT, CollectionMethod, MethodSettingT } from '../../schemas/collections.js'
import type { Clock } from '../platform/clock.js'
import { FrozenMemo } from '../cache/frozen-memo.js'
import { permissionMissing } from '../orgs/resolver.js'

/** Who is calling the data API. */
export type DataCaller =
  | { kind: 'anonymous' }
  /** `emailVerified`: whether the end user's address is verified, for rules that ask `@request.auth.emailVerified`; absent is false. */
  | { kind: 'user', id: string, emailVerified?: boolean }
  /** A platform JWT or PAT (`keyId`) holding `records.read` / `records.write` for the project: rules do not apply. */
  | { kind: 'admin', userId: string, canRead: boolean, canWrite: boolean, scopes?: string[], keyId?: string }

/** A platform user (JWT or PAT) in a project, with their permissions there: what the data API and the record tools act as. */
export function platformDataCaller (platform: { userId: string, scopes?: string[], keyId?: string }, permissions: ReadonlySet<string>): DataCaller {
  return {
    kind: 'admin',
    userId: platform.userId,
    canRead: permissions.has('records.read'),
    canWrite: permissions.has('records.write'),
    ...(platform.scopes === undefined ? {} : { scopes: platform.scopes }),
    ...(platform.keyId === undefined ? {} : { keyId: platform.keyId })
  }
}

/** What one method call may touch, with the rule's variables already substituted. */
export interface Access {
  /** ANDed into every read and into the target of every update and delete; null means no restriction. */
  filter: Filter | null
  /** Must hold for the record after a create or update. */
  check: Filter | null
  /** Field that holds the caller's id; set on create. */
  owner: string | null
  userId: string | null
  deny: ReadonlySet<string>
  readonly: ReadonlySet<string>
}

const READ_METHODS: ReadonlySet<CollectionMethod> = new Set(['list', 'get', 'download'])

type RuleVariable = '@request.auth.id' | '@request.auth.emailVerified' | '@now'

/** Replaces the rule's variables by this request's values; strings equal to a variable name are the only ones touched. */
function substitute (value: unknown, vars: Record<string, unknown>): unknown {
  if (typeof value === 'string') return Object.hasOwn(vars, value) ? vars[value] : value
  if (Array.isArray(value)) return value.map((item) => substitute(item, vars))
  if (value !== null && typeof value === 'object' && !(value instanceof Date)) {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, substitute(item, vars)]))
  }
  return value
}

/** Rule filters speak the API's names (`id`); the Store's key is `_id`. */
function toStoreFilter (filter: Filter): Filter {
  const rename = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(rename)
    if (value !== null && typeof value === 'object' && !(value instanceof Date)) {
      return Object.fromEntries(Object.entries(value).map(([key, item]) => [key === 'id' ? '_id' : key, rename(item)]))
    }
    return value
  }
  return rename(filter) as Filter
}

/**
 * Decides whether `caller` may call `method` and under which restrictions.
 * A disabled method is refused to everyone (405). A method without a rule is
 * for platform admins only; public access needs an explicit rule. A write
 * method also hides what the collection's reads hide (`hiddenFromReads`, see
 * readDeny): its answers and its bulk filters must not tell what list and get
 * keep from the same callers.
 */
export function resolveAccess (method: CollectionMethod, setting: MethodSettingT, caller: DataCaller, clock: Clock, hiddenFromReads: ReadonlySet<string> = NO_FIELDS): Access {
  if (!setting.enabled) throw collectionErrors.methodDisabled({ method })
  if (caller.kind === 'admin') {
    const allowed = READ_METHODS.has(method) ? caller.canRead : caller.canWrite
    if (!allowed) throw permissionMissing(READ_METHODS.has(method) ? 'records.read' : 'records.write', caller.scopes)
    return { filter: null, check: null, owner: null, userId: null, ...ADMIN_MASKS }
  }
  const rule = setting.rule as AccessRuleT | null
  if (rule === null) {
    if (caller.kind === 'anonymous') throw commonErrors.unauthorized({ why: 'This method needs credentials' })
    throw commonErrors.forbidden({ why: `The ${method} method has no rule, so only platform admins may call it` })
  }
  const needsUser = rule.requireAuth || rule.owner !== undefined
  if (needsUser && caller.kind !== 'user') throw commonErrors.unauthorized({ why: 'Authorization: Bearer <project JWT> is required' })
  const user = caller.kind === 'user' ? caller : null
  // Made once per request, and only for rules with a filter or check: most requests need no Date.
  let values: Record<RuleVariable, unknown> | undefined
  const vars = (): Record<RuleVariable, unknown> => (values ??= { '@request.auth.id': user?.id ?? null, '@request.auth.emailVerified': user?.emailVerified === true, '@now': clock.now() })
  const parts: Filter[] = []
  if (rule.filter !== undefined) parts.push(toStoreFilter(substitute(rule.filter, vars()) as Filter))
  if (rule.owner !== undefined && user !== null) parts.push({ [rule.owner]: user.id })
  return {
    filter: parts.length === 0 ? null : parts.reduce(andFilters),
    check: rule.check === undefined ? null : toStoreFilter(substitute(rule.check, vars()) as Filter),
    owner: rule.owner ?? null,
    userId: user?.id ?? null,
    ...fieldMasks(rule, READ_METHODS.has(method) ? NO_FIELDS : hiddenFromReads)
  }
}

const readDenials = new FrozenMemo((methods: Record<CollectionMethod, MethodSettingT>): ReadonlySet<string> => {
  const names = (['list', 'get'] as const).flatMap((method) => methods[method].enabled ? (methods[method].rule as AccessRuleT | null)?.deny ?? [] : [])
  return names.length === 0 ? NO_FIELDS : new Set(names)
})

/** Fields the collection's `list` or `get` rule denies: hidden from every write's answers and filters too. */
export function readDeny (methods: Record<CollectionMethod, MethodSettingT>): ReadonlySet<string> {
  return readDenials.get(methods)
}

/** The empty field set, shared: no mask to apply. */
export const NO_FIELDS: ReadonlySet<string> = new Set()
const ADMIN_MASKS = { deny: NO_FIELDS, readonly: NO_FIELDS }
type Masks = { deny: ReadonlySet<string>, readonly: ReadonlySet<string> }
// One deny set per rule of a shared definition, so what is derived per mask (API forms of records) is shared as well.
const masksOfRule = new FrozenMemo((rule: AccessRuleT, alsoDenied: ReadonlySet<string>): Masks =>
  ({ deny: new Set([...(rule.deny ?? []), ...alsoDenied]), readonly: new Set(rule.readonly ?? []) }))

function fieldMasks (rule: AccessRuleT, alsoDenied: ReadonlySet<string>): Masks {
  return masksOfRule.get(rule, alsoDenied)
}

/**
 * ANDs two filters. Clauses on different top-level keys go into one object,
 * the form the Store can reuse a compiled plan for (`{status, author}` rather
 * than `{$and: [{status}, {author}]}`); only colliding keys need `$and`.
 */
export function andFilters (a: Filter, b: Filter): Filter {
  const aKeys = Object.keys(a)
  if (aKeys.length === 0) return b
  const bKeys = Object.keys(b)
  if (bKeys.length === 0) return a
  if (bKeys.some((key) => Object.hasOwn(a, key))) return { $and: [a, b] }
  return { ...a, ...b }
}

/** ANDs the access filter into a request's own filter. */
export function restrict (filter: Filter, access: Access): Filter {
  return access.filter === null ? filter : andFilters(filter, access.filter)
}

/**
 * Refuses a written record that fails the rule's `check`, naming the first
 * top-level clause that does not hold so the caller knows which field.
 */
export function enforceCheck (access: Access, record: Record<string, unknown>): void {
  if (access.owner !== null && access.userId !== null && record[access.owner] !== access.userId) {
    throw collectionErrors.ruleCheckFailed({ why: `Field "${access.owner}" must hold your own user id`, field: access.owner, issue: 'must hold your own user id' })
  }
  if (access.check === null) return
  for (const [key, clause] of Object.entries(access.check)) {
    if (!compileFilter({ [key]: clause })(record)) {
      const field = key === '_id' ? 'id' : key
      throw collectionErrors.ruleCheckFailed({ why: `The record does not satisfy this method's check on "${field}"`, field, issue: 'does not satisfy this method\'s check' })
    }
  }
}

/**
 * Sign-up's access to its own new `_users` record, as if the new user (`userId`)
 * created it: the `create` rule's check and owner, with `@request.auth.id`
 * being that user, and the read-only fields of the `create` and `update` rules.
 */
export function signUpAccess (methods: Record<CollectionMethod, MethodSettingT>, userId: string, clock: Clock): Access {
  const create = methods.create.rule as AccessRuleT | null
  const update = methods.update.rule as AccessRuleT | null
  // A user signing up has not verified an address yet.
  const vars = { '@request.auth.id': userId, '@request.auth.emailVerified': false, '@now': clock.now() }
  return {
    filter: null,
    check: create?.check === undefined ? null : toStoreFilter(substitute(create.check, vars) as Filter),
    owner: create?.owner ?? null,
    userId,
    deny: readDeny(methods),
    readonly: new Set([...(create?.readonly ?? []), ...(update?.readonly ?? [])])
  }
}

/** A record whose file fields a write clears must lie inside the fileDelete rule's filter and meet its check after the write. */
export function allowFileDelete (access: Access, before: Record<string, unknown>, after: Record<string, unknown>): void {
  if (access.filter !== null && !compileFilter(access.filter)(before)) {
    throw commonErrors.forbidden({ why: 'Clearing a file field deletes its files, and the fileDelete rule does not cover this record' })
  }
  enforceCheck(access, after)
}
