import { Type, type Static } from '@sinclair/typebox'
import { DateTime, Deleted, Id } from './common.js'
import { Created, Envelope, ETAG, withHeaders } from './envelope.js'

/**
 * The auxiliary area's variables (`…/auxiliary/variables`): project-level
 * key/values given to the project's hosted apps as environment variables at
 * deploy. A secret one is write-only: sealed at rest, its value never in an
 * answer (docs/auxiliary.md#variables).
 */

export const VARIABLE_LIMITS = {
  perProject: 200,
  keyLength: 128,
  /** Bytes of one value, as for an app's secret. */
  valueBytes: 32_768,
  pageDefault: 50,
  pageMax: 200
} as const

const Key = Type.String({
  minLength: 1,
  maxLength: VARIABLE_LIMITS.keyLength,
  description: 'An environment variable name: letters, digits and `_`, not starting with a digit; not `PORT`, `HOST` nor `PLINTH_*`, which the platform sets'
})
const Value = Type.String({ maxLength: VARIABLE_LIMITS.valueBytes, description: `The value, at most ${VARIABLE_LIMITS.valueBytes} bytes` })

export const Variable = Type.Object({
  id: Id,
  key: Type.String(),
  secret: Type.Boolean({ description: 'A secret variable\'s value is sealed at rest and never shown' }),
  value: Type.Union([Type.String(), Type.Null()], { description: 'The value; null for a secret variable' }),
  version: Type.Integer({ minimum: 1, description: 'Raised by every change; send it back in If-Match' }),
  createdAt: DateTime,
  updatedAt: DateTime
}, { $id: 'AuxiliaryVariable', description: 'A project variable, given to the project\'s hosted apps as an environment variable at their next deploy' })
export type VariableT = Static<typeof Variable>

export const VariableListParams = Type.Object({ projectId: Id })
export const VariableParams = Type.Object({ projectId: Id, variableId: Id })

export const VariableListQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: VARIABLE_LIMITS.pageMax, default: VARIABLE_LIMITS.pageDefault })),
  cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 2048, description: 'The `nextCursor` of the previous page' }))
}, { additionalProperties: false })

export const CreateVariableBody = Type.Object({
  key: Key,
  value: Value,
  secret: Type.Optional(Type.Boolean({ default: false, description: 'Write-only: sealed at rest, never shown again' }))
}, { additionalProperties: false })
export type CreateVariableT = Static<typeof CreateVariableBody>

export const UpdateVariableBody = Type.Object({
  key: Type.Optional(Key),
  value: Type.Optional(Value),
  secret: Type.Optional(Type.Boolean({ description: 'true seals the current value; false needs a new `value`' }))
}, { additionalProperties: false, minProperties: 1 })
export type UpdateVariableT = Static<typeof UpdateVariableBody>

export const VariableIfMatchHeaders = Type.Object({
  'if-match': Type.Optional(Type.String({ maxLength: 64, description: 'The version the client read, as its ETag gave it (`"3"`): the write applies only at that version (412 otherwise)' }))
})

const VariablePage = Type.Object({
  items: Type.Array(Type.Ref(Variable)),
  nextCursor: Type.Union([Type.String(), Type.Null()], { description: 'Pass as `cursor` for the next page; null on the last page' })
})

export const VariableResponses = {
  list: { 200: Envelope(VariablePage) },
  variable: { 200: withHeaders(Envelope(Type.Ref(Variable)), ETAG) },
  created: { 201: { ...Created(Type.Ref(Variable)), headers: { ...Created(Type.Ref(Variable)).headers, ...ETAG } } },
  deleted: { 200: Envelope(Deleted) }
}

export const variableSchemas = [Variable]
