import { readFileSync } from 'node:fs'
import { parse } from 'yaml'
import { Ajv } from 'ajv'

/**
 * openapi.yaml read as data: every operation it declares, its parameters,
 * request body and responses, and the one judgement the fuzz test makes of
 * an answer — status below 500, and every /api answer in the envelope unless
 * the operation declares that status as something else (a redirect, a 304,
 * a file's bytes).
 */

export type JsonSchema = Record<string, unknown>

export interface Parameter {
  name: string
  in: 'path' | 'query' | 'header' | 'cookie'
  required?: boolean
  schema: JsonSchema
}

interface MediaType { schema?: JsonSchema }

export interface Operation {
  method: string
  path: string
  operationId: string
  parameters: Parameter[]
  requestBody?: { required?: boolean, content: Record<string, MediaType> }
  responses: Record<string, { content?: Record<string, MediaType> }>
  security?: Array<Record<string, string[]>>
}

export interface Contract {
  operations: Operation[]
  /** What is wrong with an error envelope by the contract's ErrorEnvelope schema (its details included); null when nothing is. */
  errorProblem: (body: unknown) => string | null
  /** Follows `$ref`s into components.schemas until a schema that is not a reference. */
  resolve: (schema: JsonSchema) => JsonSchema
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options']

export function loadContract (file: string): Contract {
  const doc = parse(readFileSync(file, 'utf8')) as {
    paths: Record<string, Record<string, Omit<Operation, 'method' | 'path'>>>
    components?: { schemas?: Record<string, JsonSchema>, responses?: Record<string, Operation['responses'][string]> }
  }
  const components = doc.components?.schemas ?? {}
  const sharedResponses = doc.components?.responses ?? {}
  const resolveResponse = (response: Operation['responses'][string] & { $ref?: string }): Operation['responses'][string] => {
    if (response.$ref === undefined) return response
    const target = sharedResponses[/^#\/components\/responses\/(.+)$/.exec(response.$ref)?.[1] ?? '']
    if (target === undefined) throw new Error(`openapi.yaml: unresolvable $ref ${response.$ref}`)
    return target
  }
  const resolve = (schema: JsonSchema): JsonSchema => {
    let current = schema
    for (let hops = 0; typeof current.$ref === 'string'; hops++) {
      const name = /^#\/components\/schemas\/(.+)$/.exec(current.$ref)?.[1]
      const target = name === undefined ? undefined : components[name]
      if (target === undefined || hops > 20) throw new Error(`openapi.yaml: unresolvable $ref ${String(current.$ref)}`)
      current = target
    }
    return current
  }
  const operations: Operation[] = []
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, operation] of Object.entries(item)) {
      if (!METHODS.includes(method)) continue
      const responses = Object.fromEntries(Object.entries(operation.responses).map(([status, response]) => [status, resolveResponse(response)]))
      operations.push({ ...operation, responses, parameters: operation.parameters ?? [], method: method.toUpperCase(), path })
    }
  }
  // OpenAPI 3.0 schema keywords such as `example` and `nullable` are annotations here.
  const ajv = new Ajv({ strict: false, allErrors: false })
  ajv.addSchema({ components: doc.components ?? {} }, 'contract')
  const validateError = ajv.compile({ $ref: 'contract#/components/schemas/ErrorEnvelope' })
  const errorProblem = (body: unknown): string | null => validateError(body) ? null : ajv.errorsText(validateError.errors)
  return { operations, resolve, errorProblem }
}

export interface Answer {
  statusCode: number
  headers: Record<string, string | string[] | number | undefined>
  body: string
  rawPayload: Buffer
}

const isBinary = (media: MediaType): boolean => media.schema?.type === 'string' && media.schema.format === 'binary'

/** What is wrong with an answer to `url`, sent for `operation`; null when nothing is. */
export function contractViolation (contract: Contract, operation: Operation, url: string, answer: Answer): string | null {
  const status = answer.statusCode
  if (status >= 500) return `answered ${status}`
  if (!url.startsWith('/api')) return null
  const declared = operation.responses[String(status)]
  if (declared !== undefined && declared.content === undefined) {
    if (status >= 300 && status < 400 && status !== 304) {
      return typeof answer.headers.location === 'string' ? null : `answered a ${status} without a Location`
    }
    return answer.rawPayload.length === 0 ? null : `answered a ${status} declared without a body, with ${answer.rawPayload.length} bytes`
  }
  if (declared?.content !== undefined && Object.values(declared.content).some(isBinary)) return null
  const type = String(answer.headers['content-type'] ?? '')
  if (type.startsWith('text/event-stream') && declared?.content?.['text/event-stream'] !== undefined) {
    return answer.body.startsWith(':') || answer.body.startsWith('event:') ? null : 'answered an event stream that does not start with an event or a comment'
  }
  if (!type.startsWith('application/json')) return `answered ${status} as ${type === '' ? 'no content type' : type}, not the JSON envelope`
  let parsed: unknown
  try {
    parsed = JSON.parse(answer.body)
  } catch {
    return `answered ${status} with a body that is not JSON`
  }
  if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) {
    const body = parsed as Record<string, unknown>
    if (body.success === true && 'data' in body) return null
    if (body.success === false) {
      const problem = contract.errorProblem(body)
      return problem === null ? null : `answered ${status} with an error envelope the contract does not describe: ${problem}`
    }
  }
  return `answered ${status} outside the envelope`
}

/** The error code of an envelope answer, if it is one. */
export function errorCode (answer: Answer): string | undefined {
  try {
    const parsed = JSON.parse(answer.body) as { code?: unknown }
    return typeof parsed.code === 'string' ? parsed.code : undefined
  } catch {
    return undefined
  }
}
