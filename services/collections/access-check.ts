import { AppError, commonErrors } from '../platform/errors.js'
import type { Clock } from '../platform/clock.js'
import type { Filter, Store } from '../store/types.js'
import { compileFilter } from '../store/semantics/match.js'
import { projectCollectionName } from '../projects/naming.js'
import { collectionErrors } from './errors.js'
import { readDeny, resolveAccess, type Access, type DataCaller } from './access.js'
import { validateDefinition } from './definition-validation.js'
import type { CollectionDef } from './definitions.js'
import { VISIBLE_COUNT_CAP, type AccessCheckBodyT, type AccessCheckT } from '../../schemas/collection-definitions.js'
import type { CollectionMethod, MethodSettingT } from '../../schemas/collections.js'

const REACHES_ONE_RECORD: ReadonlySet<CollectionMethod> = new Set(['get', 'update', 'delete', 'upload', 'download', 'fileDelete'])

export interface AccessCheckDeps {
  clock: Clock
  findCollection: (projectId: string, name: string) => Promise<CollectionDef | null>
  /** The end user's account as a project JWT's request would find it; null when there is none. */
  endUser: (projectId: string, userId: string) => Promise<{ emailVerified: boolean, disabled: boolean } | null>
}

/** Store names back to the API's (`_id` is `id`), for showing a rule's effective filter. */
function toApiNames (value: unknown): unknown {
  if (Array.isArray(value)) return value.map(toApiNames)
  if (value instanceof Date) return value.toISOString()
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key === '_id' ? 'id' : key, toApiNames(item)]))
  }
  return value
}

/**
 * "Who can see this?": what a method's rule lets an end user (or an anonymous
 * caller) do, decided by the data API's own `resolveAccess` with the rule's
 * variables filled in for that user, under the stored rules or under draft
 * ones not saved yet. Nothing is written; records are read only to count what
 * the rule's filter lets through and to say whether it reaches one record.
 */
export class AccessCheck {
  constructor (private readonly store: Store, private readonly deps: AccessCheckDeps) {}

  async check (projectId: string, name: string, input: AccessCheckBodyT): Promise<AccessCheckT> {
    const def = await this.deps.findCollection(projectId, name)
    if (def === null) throw collectionErrors.collectionNotFound({ name })
    const methods = this.methodsToTest(def, input.methods)
    const caller = await this.callerOf(projectId, input.as)
    const records = this.store.collection(projectCollectionName(projectId, name))
    const record = input.recordId === undefined ? null : await records.findOne({ _id: input.recordId })
    if (input.recordId !== undefined && record === null) throw collectionErrors.recordNotFound()
    const base = { method: input.method, as: input.as }
    if (caller === 'disabled') {
      return { ...base, allowed: false, refusal: refusalOf(commonErrors.invalidToken({ why: 'This end user is disabled: their tokens are refused' })), rule: null, record: null, visible: null }
    }
    let access: Access
    try {
      access = resolveAccess(input.method, methods[input.method], caller, this.deps.clock, readDeny(methods))
    } catch (error) {
      if (!(error instanceof AppError)) throw error
      return { ...base, allowed: false, refusal: refusalOf(error), rule: null, record: null, visible: null }
    }
    const filter: Filter = access.filter ?? {}
    const matches = compileFilter(filter)
    const visible = input.method === 'list' || input.method === 'get'
      ? await records.countDocuments(filter, { limit: VISIBLE_COUNT_CAP + 1 }).then((count) => ({ count: Math.min(count, VISIBLE_COUNT_CAP), capped: count > VISIBLE_COUNT_CAP }))
      : null
    const reached = record === null ? null : { id: input.recordId as string, reached: REACHES_ONE_RECORD.has(input.method) || input.method === 'list' ? matches(record) : null }
    return {
      ...base,
      allowed: true,
      refusal: null,
      rule: {
        filter: access.filter === null ? null : toApiNames(access.filter) as Record<string, unknown>,
        check: access.check === null ? null : toApiNames(access.check) as Record<string, unknown>,
        owner: access.owner,
        deniedFields: [...access.deny].sort(),
        readonlyFields: [...access.readonly].sort()
      },
      record: reached,
      visible
    }
  }

  /** The stored methods, or the stored ones with the draft's given methods over them, validated as a save would. */
  private methodsToTest (def: CollectionDef, draft: AccessCheckBodyT['methods']): Record<CollectionMethod, MethodSettingT> {
    if (draft === undefined) return def.methods
    const given = Object.fromEntries(Object.entries(draft).filter(([, setting]) => setting !== undefined)) as Partial<Record<CollectionMethod, MethodSettingT>>
    const methods = { ...def.methods, ...given }
    validateDefinition(def.name, { fields: def.fields, indexes: def.indexes, methods, ...(def.signUpFields === undefined ? {} : { signUpFields: def.signUpFields }) })
    return methods
  }

  private async callerOf (projectId: string, as: AccessCheckBodyT['as']): Promise<DataCaller | 'disabled'> {
    if (as.kind === 'anonymous') return { kind: 'anonymous' }
    const account = await this.deps.endUser(projectId, as.userId)
    if (account === null) throw commonErrors.userNotFound({ endUser: true })
    if (account.disabled) return 'disabled'
    return { kind: 'user', id: as.userId, emailVerified: account.emailVerified }
  }
}

function refusalOf (error: AppError): { status: number, code: string, message: string } {
  return { status: error.status, code: error.code, message: error.message }
}
