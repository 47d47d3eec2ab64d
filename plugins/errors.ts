import fp from 'fastify-plugin'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { AppError } from '../services/errors.js'

interface ErrorBody { success: false, message: string, code: string, details?: unknown }
interface ValidationIssue { instancePath: string, message?: string, params: Record<string, unknown> }

/** Fastify's own failures, by code, and what the client is told about them. */
const FASTIFY_ERRORS: Record<string, { status: number, code: string, message?: string }> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: { status: 415, code: 'APP_UNSUPPORTED_MEDIA_TYPE', message: 'Unsupported Content-Type; send application/json' },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: { status: 400, code: 'APP_INVALID_CONTENT_LENGTH', message: 'Content-Length does not match the body' },
  FST_ERR_CTP_BODY_TOO_LARGE: { status: 413, code: 'APP_PAYLOAD_TOO_LARGE', message: 'Request body is too large' },
  FST_ERR_CTP_EMPTY_JSON_BODY: { status: 400, code: 'APP_INVALID_JSON', message: 'Body is empty but Content-Type is application/json' },
  FST_ERR_CTP_INVALID_JSON_BODY: { status: 400, code: 'APP_INVALID_JSON', message: 'Body is not valid JSON' },
  FST_ERR_CTP_INVALID_TYPE: { status: 400, code: 'APP_INVALID_CONTENT_TYPE', message: 'Content-Type header is malformed' },
  FST_ERR_ASYNC_CONSTRAINT: { status: 400, code: 'APP_BAD_REQUEST' },
  FST_ERR_BAD_URL: { status: 400, code: 'APP_BAD_URL', message: 'The URL is malformed' },
  FST_ERR_MAX_PARAM_LENGTH: { status: 414, code: 'APP_URL_TOO_LONG', message: 'A segment of the URL is too long' },
  FST_ERR_BAD_STATUS_CODE: { status: 500, code: 'APP_INTERNAL' }
}

function fieldPath (context: string | undefined, issue: ValidationIssue): string {
  const segments = issue.instancePath.split('/').filter(Boolean).map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
  const missing = issue.params.missingProperty ?? issue.params.additionalProperty
  if (typeof missing === 'string') segments.push(missing)
  return [context ?? 'request', ...segments].join('.')
}

function validationBody (error: FastifyError): ErrorBody {
  const issues = (error.validation ?? []) as ValidationIssue[]
  const details = issues.map((issue) => {
    const path = fieldPath(error.validationContext, issue)
    let message = issue.message ?? 'is invalid'
    if (typeof issue.params.additionalProperty === 'string') message = 'is not an allowed field'
    else if (typeof issue.params.missingProperty === 'string') message = 'is required'
    return { path, message }
  })
  const first = details[0]
  return {
    success: false,
    code: 'APP_VALIDATION_FAILED',
    message: first === undefined ? 'Request is invalid' : `${first.path} ${first.message}`,
    details
  }
}

/** Turns any error into the one envelope; no stack trace or internal message leaves the server. */
export function toErrorReply (error: FastifyError | Error): { status: number, body: ErrorBody, internal: boolean } {
  if (error instanceof AppError) {
    const body: ErrorBody = { success: false, message: error.message, code: error.code }
    if (error.details !== undefined) body.details = error.details
    return { status: error.status, body, internal: error.status >= 500 }
  }
  const fastifyError = error as FastifyError
  if (fastifyError.validation !== undefined) return { status: 400, body: validationBody(fastifyError), internal: false }
  if (error instanceof SyntaxError && fastifyError.statusCode === 400) {
    return { status: 400, body: { success: false, code: 'APP_INVALID_JSON', message: 'Body is not valid JSON' }, internal: false }
  }
  const known = fastifyError.code === undefined ? undefined : FASTIFY_ERRORS[fastifyError.code]
  if (known !== undefined && known.status < 500) {
    return { status: known.status, body: { success: false, code: known.code, message: known.message ?? fastifyError.message }, internal: false }
  }
  const status = fastifyError.statusCode
  if (typeof status === 'number' && status >= 400 && status < 500) {
    return { status, body: { success: false, code: 'APP_BAD_REQUEST', message: fastifyError.message }, internal: false }
  }
  return { status: 500, body: { success: false, code: 'APP_INTERNAL', message: 'Internal server error' }, internal: true }
}

/**
 * Fastify's `frameworkErrors` option (see options.ts): a URL that fails while
 * being routed (bad percent-encoding, an overlong parameter) never reaches the
 * error handler, and would otherwise be answered outside the envelope.
 */
export function frameworkErrorReply (error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const { status, body } = toErrorReply(error)
  request.log.info({ code: body.code, status }, body.message)
  void reply.code(status).send(body)
}

const BODYLESS_METHODS = new Set(['GET', 'HEAD', 'DELETE', 'OPTIONS'])

async function errorsPlugin (app: FastifyInstance): Promise<void> {
  // Generated clients often send Content-Type: application/json on a DELETE with no body; that is not an error.
  const parseJson = app.getDefaultJsonParser('error', 'error')
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if (body === '' && BODYLESS_METHODS.has(request.method)) { done(null, undefined); return }
    parseJson(request, body.toString(), done)
  })

  app.setErrorHandler((error: FastifyError, request, reply) => {
    const { status, body, internal } = toErrorReply(error)
    if (internal) request.log.error({ err: error }, 'request failed')
    else request.log.info({ code: body.code, status }, body.message)
    if (status === 429 && error instanceof AppError) {
      const retryAfter = (error.details as { retryAfterSeconds?: number } | undefined)?.retryAfterSeconds
      if (retryAfter !== undefined) reply.header('retry-after', String(retryAfter))
    }
    return reply.code(status).send(body)
  })

  app.setNotFoundHandler((request, reply) => {
    const body: ErrorBody = { success: false, code: 'APP_ROUTE_NOT_FOUND', message: `No route for ${request.method} ${request.url.split('?')[0]}` }
    return reply.code(404).send(body)
  })
}

export default fp(errorsPlugin, { name: 'plinth-errors', fastify: '5.x' })
