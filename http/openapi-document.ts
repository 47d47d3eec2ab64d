import { ERROR_STATUSES } from '../schemas/envelope.js'
import { commonErrors } from '../services/platform/errors.js'

/**
 * What the generated document needs beyond what each route declares: the
 * failures any request may meet before its route's own code runs, and one
 * shared response per error status (with the headers that go with it), so
 * every operation lists the same error by reference and error bodies are
 * always JSON, even on a route that answers bytes.
 */

type Json = Record<string, any>

const ENVELOPE_REF = '#/components/schemas/ErrorEnvelope'
const BODY_METHODS = new Set(['post', 'put', 'patch', 'delete'])
const OPERATION_METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options']

const SUCCESS: Record<string, string> = {
  200: 'Done: the envelope, with the answer in `data`',
  201: 'Created: the envelope, with what was created in `data`'
}

const RESPONSE_HEADERS: Record<number, Json> = {
  405: { Allow: { description: 'The methods this path takes', schema: { type: 'string', example: 'GET, POST' } } },
  416: { 'Content-Range': { description: '`bytes */<size>`: the size of the file', schema: { type: 'string' } } },
  429: { 'Retry-After': { description: 'Seconds to wait before trying again', schema: { type: 'integer' } } },
  503: { 'Retry-After': { description: 'Seconds to wait before trying again', schema: { type: 'integer' } } }
}

/**
 * Failures of the request itself, answered by the server before or beside
 * the route: the slow or oversized request (408, 431) and a draining server
 * (503) on any route; a malformed or overlong path segment (400, 414) where
 * the path has parameters; a body that is not JSON, too large or of an
 * unsupported type (400, 413, 415) on methods that carry one; validation
 * (400) wherever a query string or header is checked.
 */
function impliedStatuses (path: string, method: string, operation: Json): number[] {
  const statuses = [408, 431, 503]
  if (path.includes('{')) statuses.push(400, 414)
  if (BODY_METHODS.has(method)) statuses.push(400, 413, 415)
  if ((operation.parameters ?? []).some((parameter: Json) => parameter.in !== 'path')) statuses.push(400)
  return statuses
}

const responseRef = (status: number): Json => ({ $ref: `#/components/responses/${ERROR_STATUSES[status].name}` })

function isErrorEnvelope (response: Json): boolean {
  const content = response.content as Record<string, Json> | undefined
  return content !== undefined && Object.values(content).every((media) => media.schema?.$ref === ENVELOPE_REF)
}

/**
 * Bodies the server reads itself are never validated as JSON, so their
 * schemas carry no type: `x-binary` marks bytes (OpenAPI's binary string)
 * and `x-form` a multipart form of such parts.
 */
function binary (schema: Json | undefined): void {
  if (schema === undefined) return
  if (schema['x-binary'] === true) Object.assign(schema, { type: 'string', format: 'binary' })
  if (schema['x-form'] === true) schema.type = 'object'
  delete schema['x-binary']
  delete schema['x-form']
  for (const property of Object.values<Json>(schema.properties ?? {})) binary(property)
}

export function completeDocument (document: Json): Json {
  const used = new Set<number>()
  for (const [path, item] of Object.entries<Json>(document.paths ?? {})) {
    for (const method of OPERATION_METHODS) {
      const operation = item[method] as Json | undefined
      if (operation === undefined) continue
      for (const media of Object.values<Json>(operation.requestBody?.content ?? {})) binary(media.schema)
      const responses: Json = operation.responses
      for (const [key, response] of Object.entries<Json>(responses)) {
        if (response.description === 'Default Response') response.description = SUCCESS[key] ?? 'Success'
        const status = Number(key)
        if (ERROR_STATUSES[status] === undefined || !isErrorEnvelope(response)) continue
        responses[key] = responseRef(status)
        used.add(status)
      }
      for (const status of impliedStatuses(path, method, operation)) {
        responses[status] ??= responseRef(status)
        used.add(status)
      }
      responses.default = { $ref: '#/components/responses/UnexpectedError' }
      operation.responses = Object.fromEntries(Object.entries(responses).sort(([a], [b]) => a.localeCompare(b)))
    }
  }
  const shared: Json = {}
  for (const status of [...used].sort((a, b) => a - b)) {
    const { name, description } = ERROR_STATUSES[status]
    shared[name] = {
      description,
      ...(RESPONSE_HEADERS[status] === undefined ? {} : { headers: RESPONSE_HEADERS[status] }),
      content: { 'application/json': { schema: { $ref: ENVELOPE_REF } } }
    }
  }
  shared.UnexpectedError = {
    description: `Any other failure: 500 ${commonErrors.internal.code}, a bug whose details stay in the server log`,
    content: { 'application/json': { schema: { $ref: ENVELOPE_REF } } }
  }
  document.components = { ...document.components, responses: shared }
  return document
}
