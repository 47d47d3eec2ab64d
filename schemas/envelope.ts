import { Type, type Static, type TSchema } from '@sinclair/typebox'

/** Every successful `/api` answer: `{ success: true, data }`. */
export const Envelope = <T extends TSchema>(data: T) => Type.Object({
  success: Type.Literal(true),
  data
})

export const FieldIssue = Type.Object({
  path: Type.String({
    description: 'Where in the request: `body.email`, `query.limit` or `params.id` as validated, `filter.$or[1].views` inside a filter, or a record field\'s name',
    examples: ['body.email']
  }),
  message: Type.String({ description: 'What is wrong there', examples: ['is required'] }),
  field: Type.Optional(Type.String({ description: 'The collection field concerned, when the path is a filter, sort or field selection that names one' }))
}, { $id: 'FieldIssue', additionalProperties: false })
export type FieldIssueT = Static<typeof FieldIssue>

/** The one shape of `details`, whatever the error: services and the error plugin build nothing else. */
export const ErrorDetails = Type.Object({
  fields: Type.Optional(Type.Array(Type.Ref(FieldIssue), { description: 'The offending parts of the request, each with what is wrong there' })),
  permission: Type.Optional(Type.String({ description: 'The permission the caller lacks (403)', examples: ['org.update'] })),
  retryAfterSeconds: Type.Optional(Type.Integer({ minimum: 0, description: 'When to try again, as in Retry-After (429, 503)' })),
  limit: Type.Optional(Type.Integer({ description: 'The bound the request went past: bytes, files, form fields or records' })),
  expected: Type.Optional(Type.Union([Type.String(), Type.Integer()], { description: 'What should have been: a declared size or checksum, a chunk\'s length, the version in If-Match' })),
  actual: Type.Optional(Type.Union([Type.String(), Type.Integer()], { description: 'What is: the size or checksum received, the record\'s version, a file\'s sniffed type' })),
  count: Type.Optional(Type.Integer({ description: 'How many records stand in the way' })),
  ids: Type.Optional(Type.Array(Type.String(), { description: 'The ids in question: users who are not members, projects outside the organization' })),
  missing: Type.Optional(Type.Array(Type.Integer(), { description: 'Upload chunks not received yet' })),
  allowed: Type.Optional(Type.Array(Type.String(), { description: 'What would have been accepted: media types, or the security schemes a route takes (APP_WRONG_TOKEN_KIND)' }))
}, { $id: 'ErrorDetails', additionalProperties: false, description: 'Structured context of a failure; every member is optional' })

export type ErrorDetailsT = Static<typeof ErrorDetails>

/** Every failed answer: `{ success: false, message, code, details? }`. */
export const ErrorEnvelope = Type.Object({
  success: Type.Literal(false),
  message: Type.String({ description: 'Human-readable explanation' }),
  code: Type.String({ description: 'Stable machine-readable code, APP_SCREAMING_SNAKE', examples: ['APP_VALIDATION_FAILED'] }),
  details: Type.Optional(Type.Ref(ErrorDetails))
}, { $id: 'ErrorEnvelope' })

/**
 * The error statuses this API answers with: the name each gets among the
 * contract's shared responses, and what it means.
 */
export const ERROR_STATUSES: Record<number, { name: string, description: string }> = {
  400: { name: 'BadRequest', description: 'The request is invalid: a field breaks its schema (APP_VALIDATION_FAILED, `details.fields` lists each), the body is not JSON, or the service refuses a value' },
  401: { name: 'Unauthorized', description: 'No credential (APP_UNAUTHORIZED); one that is not valid: expired, revoked, its session ended (APP_INVALID_TOKEN: refresh once and retry); or a token of another kind than the route takes, or an end user\'s token of another project (APP_WRONG_TOKEN_KIND: a refresh does not help; `details.allowed` names the security schemes the route takes; the service-token `verify` route answers any other token APP_INVALID_SERVICE_TOKEN)' },
  402: { name: 'PaymentRequired', description: 'A spending budget has nothing left for now (APP_LLM_BUDGET_EXCEEDED); not worth retrying before it is raised or a new month starts' },
  403: { name: 'Forbidden', description: 'The caller may not do this; `details.permission` names a missing permission' },
  404: { name: 'NotFound', description: 'Not found, or not visible to the caller' },
  405: { name: 'MethodNotAllowed', description: 'The method is not allowed here (a collection method that is disabled); Allow lists the methods that are' },
  408: { name: 'RequestTimeout', description: 'The headers or the body did not arrive in time; the connection is closed' },
  409: { name: 'Conflict', description: 'Conflicts with the current state' },
  410: { name: 'Gone', description: 'No longer available' },
  412: { name: 'PreconditionFailed', description: 'If-Match does not hold: the record changed meanwhile' },
  413: { name: 'PayloadTooLarge', description: 'The body, a file or a form is larger than allowed' },
  414: { name: 'UriTooLong', description: 'A segment of the path is too long' },
  415: { name: 'UnsupportedMediaType', description: 'A Content-Type this route does not take, or a file type the field does not allow' },
  416: { name: 'RangeNotSatisfiable', description: 'The Range lies outside the file; Content-Range gives its size' },
  422: { name: 'UnprocessableContent', description: 'The content does not match what was declared (size, checksum)' },
  423: { name: 'Locked', description: 'The resource is locked (a page or a saved view): whoever locked it, or an admin, unlocks it' },
  429: { name: 'TooManyRequests', description: 'Too many attempts; Retry-After says when to try again' },
  431: { name: 'HeadersTooLarge', description: 'The request line and headers are too large; the connection is closed' },
  502: { name: 'BadGateway', description: 'An upstream service (a DNS provider) failed or refused; the message says why' },
  503: { name: 'ServiceUnavailable', description: 'The server is shutting down or its store does not answer; Retry-After says when to try again, on this node or another' }
}

interface HeaderSchema { type: 'string' | 'integer', description: string }

/** A success response and the headers it carries, for the contract; the serializer reads only the body schema. */
export function withHeaders<T extends TSchema> (schema: T, headers: Record<string, HeaderSchema>): T {
  return { ...schema, headers }
}

export const LOCATION: Record<string, HeaderSchema> = { Location: { type: 'string', description: 'The URL of what was created' } }

/** A 201 answer: the envelope around what was created, with its URL in Location (`created` in routes/replies.ts). */
export const Created = <T extends TSchema>(data: T) => withHeaders(Envelope(data), LOCATION)
export const ETAG: Record<string, HeaderSchema> = { ETag: { type: 'string', description: 'The record\'s version in quotes ("3"): send it back in If-Match' } }

type ErrorRef = ReturnType<typeof errorRef>
const errorRef = (description: string) => Type.Ref(ErrorEnvelope, { description })

/** Error responses a route declares, each the shared ErrorEnvelope. */
export function errorResponses<S extends number[]> (...statuses: S): { [K in S[number]]: ErrorRef } {
  const responses: Record<number, ErrorRef> = {}
  for (const status of statuses) {
    responses[status] = errorRef(ERROR_STATUSES[status]?.description ?? 'Error')
  }
  return responses as { [K in S[number]]: ErrorRef }
}

/** Schemas registered once with `addSchema` so routes can reference them by `$id`. */
export const sharedSchemas = [FieldIssue, ErrorDetails, ErrorEnvelope]
