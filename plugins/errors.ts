import { STATUS_CODES } from 'node:http'
import type { Socket } from 'node:net'
import fp from 'fastify-plugin'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { AppError, commonErrors, type ErrorDetails } from '../services/platform/errors.js'

interface ErrorBody { success: false, message: string, code: string, details?: ErrorDetails }
interface ValidationIssue { instancePath: string, message?: string, params: Record<string, unknown> }

/** Fastify's own failures, by code, and what the client is told about them; any other is a bug (500). */
const FASTIFY_ERRORS: Record<string, (error: FastifyError) => AppError> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: () => commonErrors.unsupportedMediaType(),
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: () => commonErrors.invalidContentLength(),
  FST_ERR_CTP_BODY_TOO_LARGE: () => commonErrors.payloadTooLarge(),
  FST_ERR_CTP_EMPTY_JSON_BODY: () => commonErrors.invalidJson({ why: 'Body is empty but Content-Type is application/json' }),
  FST_ERR_CTP_INVALID_JSON_BODY: () => commonErrors.invalidJson({ why: 'Body is not valid JSON' }),
  FST_ERR_CTP_INVALID_TYPE: () => commonErrors.invalidContentType(),
  FST_ERR_ASYNC_CONSTRAINT: (error) => commonErrors.badRequest({ why: error.message }),
  FST_ERR_BAD_URL: () => commonErrors.badUrl(),
  FST_ERR_MAX_PARAM_LENGTH: () => commonErrors.uriTooLong()
}

function fieldPath (context: string | undefined, issue: ValidationIssue): string {
  const segments = issue.instancePath.split('/').filter(Boolean).map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
  const missing = issue.params.missingProperty ?? issue.params.additionalProperty
  if (typeof missing === 'string') segments.push(missing)
  return [context ?? 'request', ...segments].join('.')
}

function validationFailed (error: FastifyError): AppError {
  const issues = (error.validation ?? []) as ValidationIssue[]
  return commonErrors.validationFailed({
    fields: issues.map((issue) => {
      const path = fieldPath(error.validationContext, issue)
      let message = issue.message ?? 'is invalid'
      if (typeof issue.params.additionalProperty === 'string') message = 'is not an allowed field'
      else if (typeof issue.params.missingProperty === 'string') message = 'is required'
      return { path, message }
    })
  })
}

function envelopeOf (error: AppError): ErrorBody {
  const body: ErrorBody = { success: false, message: error.message, code: error.code }
  if (error.details !== undefined) body.details = error.details
  return body
}

/** What the client is told of any failure: a coded AppError, or 500 for a bug. */
function asAppError (error: FastifyError | Error): AppError {
  if (error instanceof AppError) return error
  const fastifyError = error as FastifyError
  if (fastifyError.validation !== undefined) return validationFailed(fastifyError)
  if (error instanceof SyntaxError && fastifyError.statusCode === 400) return commonErrors.invalidJson({ why: 'Body is not valid JSON' })
  const known = fastifyError.code === undefined ? undefined : FASTIFY_ERRORS[fastifyError.code]
  if (known !== undefined) return known(fastifyError)
  const status = fastifyError.statusCode
  if (typeof status === 'number' && status >= 400 && status < 500) return new AppError(commonErrors.badRequest.code, status, fastifyError.message)
  return commonErrors.internal()
}

/** Turns any error into the one envelope; no stack trace or internal message leaves the server. */
export function toErrorReply (error: FastifyError | Error): { status: number, body: ErrorBody, internal: boolean } {
  const coded = asAppError(error)
  return { status: coded.status, body: envelopeOf(coded), internal: coded.status >= 500 }
}

/**
 * Errors the router meets before any route or hook runs (a path that is not
 * valid percent-encoding, a segment over maxParamLength): a Fastify server
 * option, so it is wired in options.ts.
 */
export function frameworkErrors (error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const { status, body } = toErrorReply(error)
  request.log.info({ code: body.code, status }, body.message)
  void reply.code(status).send(body)
}

/** What Node's HTTP parser refuses before Fastify sees a request; any other parser error is a 400. */
const CLIENT_ERRORS: Record<string, () => AppError> = {
  HPE_HEADER_OVERFLOW: () => commonErrors.headersTooLarge(),
  ERR_HTTP_REQUEST_TIMEOUT: () => commonErrors.requestTimeout()
}

/**
 * The method of the request the parser refused, where it shows: a request
 * whose body was under way, or the bytes refused when they begin with a
 * request line (a head sent in one piece, not pipelined behind another). A
 * head that never came whole (a header timeout) shows none: it is answered
 * with a body.
 */
function refusedMethod (error: Error & { rawPacket?: unknown }, socket: Socket): string | null {
  // Node keeps the last request it read here; only one still arriving is the refused one.
  const incoming = (socket as Socket & { parser?: { incoming?: { method?: string, complete?: boolean } | null } | null }).parser?.incoming
  if (incoming?.complete === false && typeof incoming.method === 'string') return incoming.method
  if (!Buffer.isBuffer(error.rawPacket)) return null
  return /^([A-Z]+) /.exec(error.rawPacket.subarray(0, 16).toString('latin1'))?.[1] ?? null
}

/**
 * The server's `clientError` listener (a Fastify server option): the socket
 * gets a plain HTTP answer carrying the envelope, then is closed, since after
 * a parser error nothing more on it can be trusted.
 */
export function clientErrorHandler (this: FastifyInstance, error: Error & { code?: string }, socket: Socket): void {
  // A reset or an already closed socket has no one left to answer.
  if (error.code === 'ECONNRESET' || socket.destroyed) return
  const { status, code, message } = (CLIENT_ERRORS[error.code ?? ''] ?? commonErrors.malformedRequest)()
  // Debug, not info: idle preconnects and scanners make these by the connection, not by the request.
  this.log.debug({ code, status, parserCode: error.code }, message)
  // As Node itself does: never write into a response already under way on this socket.
  const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } | null })._httpMessage
  if (socket.writable && inFlight?.headersSent !== true) {
    const body = JSON.stringify({ success: false, message, code })
    // An answer to HEAD has no body (RFC 9110 §9.3.2); a client would read one as the start of the next answer.
    const sent = refusedMethod(error, socket) === 'HEAD' ? '' : body
    socket.write(`HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${sent}`)
  }
  socket.destroy()
}

const BODYLESS_METHODS = new Set(['GET', 'HEAD', 'DELETE', 'OPTIONS'])
const ROUTABLE_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']

async function errorsPlugin (app: FastifyInstance): Promise<void> {
  // Generated clients often send Content-Type: application/json on a DELETE with no body; that is not an error.
  const parseJson = app.getDefaultJsonParser('error', 'error')
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if (body === '' && BODYLESS_METHODS.has(request.method)) { done(null, undefined); return }
    parseJson(request, body.toString(), done)
  })

  // Requests that still arrive while the server drains (pipelined, or on a busy keep-alive connection) are shed at
  // once, so the load balancer sends them elsewhere; the connection closes after the answer.
  let draining = false
  app.addHook('preClose', async () => { draining = true })
  app.addHook('onRequest', (_request, reply, done) => {
    if (!draining) { done(); return }
    void reply.header('connection', 'close')
    done(commonErrors.shuttingDown())
  })

  app.setErrorHandler((error: FastifyError, request, reply) => {
    const { status, body, internal } = toErrorReply(error)
    if (internal) request.log.error({ err: error }, 'request failed')
    else request.log.info({ code: body.code, status }, body.message)
    if ((status === 429 || status === 503) && error instanceof AppError) {
      const retryAfter = error.details?.retryAfterSeconds
      if (retryAfter !== undefined) reply.header('retry-after', String(retryAfter))
    }
    return reply.code(status).send(body)
  })

  // A path that exists under other methods answers 405 with those methods in Allow, as RFC 9110 asks, not 404.
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0]
    const allowed = ROUTABLE_METHODS.filter((method) => app.findRoute({ method, url: path }) !== null)
    if (allowed.length > 0) {
      const refused = commonErrors.methodNotAllowed({ method: request.method, path, allowed })
      return reply.code(refused.status).header('allow', allowed.join(', ')).send(envelopeOf(refused))
    }
    const missing = commonErrors.routeNotFound({ method: request.method, path })
    return reply.code(missing.status).send(envelopeOf(missing))
  })
}

export default fp(errorsPlugin, { name: 'plinth-errors', fastify: '5.x' })
