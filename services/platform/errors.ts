import type { ErrorDetailsT, FieldIssueT } from '../../schemas/envelope.js'

export type ErrorDetails = ErrorDetailsT

/**
 * Coded errors thrown by services. The HTTP layer maps `status` and `code`
 * into the error envelope; services never know about HTTP beyond this number.
 * `details` has one shape for every error, so clients can type it.
 */
export class AppError extends Error {
  readonly code: string
  readonly status: number
  readonly details?: ErrorDetails

  constructor (code: string, status: number, message: string, details?: ErrorDetails) {
    super(message)
    this.name = 'AppError'
    this.code = code
    this.status = status
    this.details = details
  }
}

/** Details naming one offending part of the request; `field` is the collection field a filter, sort or selection names. */
export function fieldIssue (path: string, message: string, field?: string): ErrorDetails {
  return { fields: [field === undefined ? { path, message } : { path, message, field }] }
}

/**
 * One code as a catalogue declares it. `message` is the template of what the
 * client reads (a function of typed parameters, or a fixed text);
 * `details` builds the structured part from the same parameters;
 * `description` says when a client meets the code, and is what a route's
 * "Refused with" list in the contract shows.
 */
export interface ErrorEntry<P = never> {
  code: `APP_${string}`
  status: number
  message: string | ((params: P) => string)
  details?: (params: P) => ErrorDetails | undefined
  description: string
}

const catalogued: unique symbol = Symbol('catalogued')

/** A code as a route declares it in `config.errors`: only a catalogue makes one. */
export interface DeclaredError {
  readonly code: `APP_${string}`
  readonly status: number
  readonly description: string
  /** Whether `error` is this code (for services that translate one refusal into another). */
  is: (error: unknown) => error is AppError
  readonly [catalogued]: true
}

// A template of no parameters infers `unknown`: its entry is called with none.
type NoneIfUnknown<P> = unknown extends P ? undefined : P
type ParamsOf<E> = E extends { message: (params: infer P) => string } ? NoneIfUnknown<P>
  : E extends { details: (params: infer P) => ErrorDetails | undefined } ? NoneIfUnknown<P>
    : undefined

/** A catalogue entry: called with its parameters, it makes the AppError to throw. */
export type ErrorDefinition<P> = ([P] extends [undefined] ? () => AppError : undefined extends P ? (params?: P) => AppError : (params: P) => AppError) & DeclaredError

export type ErrorCatalogue<T> = { readonly [K in keyof T]: ErrorDefinition<ParamsOf<T[K]>> }

// Every code of every catalogue, so that a code declared twice stops the process at its first import.
const declaredCodes = new Map<string, string>()

/**
 * A family's error catalogue: each `APP_*` code once, with its status and
 * message template. Services throw by name (`throw dnsErrors.zoneExists({ name })`);
 * routes list the names they may answer in `config.errors`, from which
 * their 4xx responses and the contract's "Refused with" text are written.
 */
export function errorCatalogue<const T extends Record<string, ErrorEntry<any>>> (family: string, entries: T): ErrorCatalogue<T> {
  const catalogue: Record<string, DeclaredError> = {}
  for (const [name, entry] of Object.entries(entries)) {
    const owner = declaredCodes.get(entry.code)
    if (owner !== undefined && owner !== `${family}.${name}`) throw new Error(`${entry.code} is declared twice: ${owner} and ${family}.${name}`)
    declaredCodes.set(entry.code, `${family}.${name}`)
    const make = (params?: unknown): AppError => {
      const message = typeof entry.message === 'string' ? entry.message : entry.message(params)
      return new AppError(entry.code, entry.status, message, entry.details?.(params))
    }
    catalogue[name] = Object.assign(make, {
      code: entry.code,
      status: entry.status,
      description: entry.description,
      is: (error: unknown): error is AppError => error instanceof AppError && error.code === entry.code,
      [catalogued]: true as const
    })
  }
  return catalogue as unknown as ErrorCatalogue<T>
}

/**
 * Codes every family may answer: the request itself (what the errors plugin
 * says of Fastify's and Node's failures), permissions and the parents every
 * family sits under, rate limits and an unavailable store.
 */
export const commonErrors = errorCatalogue('common', {
  validationFailed: {
    code: 'APP_VALIDATION_FAILED',
    status: 400,
    message: ({ fields }: { fields: FieldIssueT[] }) => fields.length === 0 ? 'Request is invalid' : `${fields[0].path} ${fields[0].message}`,
    details: ({ fields }) => ({ fields }),
    description: 'a field breaks its schema; `details.fields` lists each'
  },
  invalidJson: { code: 'APP_INVALID_JSON', status: 400, message: ({ why }: { why: string }) => why, description: 'the body is not valid JSON' },
  invalidContentType: { code: 'APP_INVALID_CONTENT_TYPE', status: 400, message: 'Content-Type header is malformed', description: 'the Content-Type header is malformed' },
  invalidContentLength: { code: 'APP_INVALID_CONTENT_LENGTH', status: 400, message: 'Content-Length does not match the body', description: 'Content-Length does not match the body' },
  badUrl: { code: 'APP_BAD_URL', status: 400, message: 'The URL is malformed', description: 'the URL is not valid percent-encoding' },
  badRequest: { code: 'APP_BAD_REQUEST', status: 400, message: ({ why }: { why: string }) => why, description: 'the request is refused before its route runs' },
  invalidCursor: {
    code: 'APP_INVALID_CURSOR',
    status: 400,
    message: 'cursor is not a nextCursor of this list',
    details: () => fieldIssue('query.cursor', 'is not a nextCursor of this list'),
    description: 'the cursor is not a `nextCursor` this list gave'
  },
  malformedRequest: { code: 'APP_MALFORMED_REQUEST', status: 400, message: 'The request is not valid HTTP', description: 'the request is not valid HTTP' },
  unauthorized: {
    code: 'APP_UNAUTHORIZED',
    status: 401,
    message: ({ why }: { why: string }) => why,
    description: 'no credential, or one not sent as the route takes it (`Authorization: Bearer …`)'
  },
  invalidToken: {
    code: 'APP_INVALID_TOKEN',
    status: 401,
    message: ({ why }: { why: string }) => why,
    description: 'the credential is not valid: expired, revoked or tampered with, its session has ended, or its user is gone or disabled; a client holding a session refreshes it once and sends the call again'
  },
  // Its own code so that a client tells it from expiry without a round trip: a refresh gives a token of the same kind.
  wrongTokenKind: {
    code: 'APP_WRONG_TOKEN_KIND',
    status: 401,
    message: ({ why }: { why: string, schemes: string[] }) => why,
    details: ({ schemes }: { schemes: string[] }) => ({ allowed: schemes }),
    description: 'a token of another kind than the route takes (a platform token on an end user\'s route, a project token on a platform route, a service token anywhere but `verify`), or an end user\'s token of another project; `details.allowed` names the security schemes the route takes; a refresh does not help'
  },
  // A browser's preflight from an origin neither the platform (CORS_ORIGINS) nor the project allows; any /api route may meet it.
  corsOriginRefused: {
    code: 'APP_CORS_ORIGIN_REFUSED',
    status: 403,
    message: ({ origin }: { origin: string }) => `Origin ${origin} may not call this API from a browser`,
    description: 'a browser\'s preflight from an origin that is not allowed'
  },
  invalidName: {
    code: 'APP_INVALID_NAME',
    status: 400,
    message: 'name cannot be blank',
    details: () => fieldIssue('body.name', 'cannot be blank'),
    description: 'the name is blank'
  },
  invalidSlug: {
    code: 'APP_INVALID_SLUG',
    status: 400,
    message: 'slug must be 1 to 48 lower-case letters, digits or inner hyphens',
    details: () => fieldIssue('body.slug', 'must be 1 to 48 lower-case letters, digits or inner hyphens'),
    description: 'the slug is not 1 to 48 lower-case letters, digits or inner hyphens'
  },
  slugTaken: {
    code: 'APP_SLUG_TAKEN',
    status: 409,
    message: ({ what, slug, within }: { what: string, slug: string, within?: string }) =>
      `${what} with the slug "${slug}" already exists${within === undefined ? '' : ` in ${within}`}`,
    details: () => fieldIssue('body.slug', 'is taken'),
    description: 'the slug is taken; one derived from the name is never refused, one chosen is never changed'
  },
  invalidIfMatch: {
    code: 'APP_INVALID_IF_MATCH',
    status: 400,
    message: 'If-Match must be a version such as "3"',
    details: () => fieldIssue('headers.if-match', 'must be a version such as "3"'),
    description: 'If-Match is not a version such as `"3"`'
  },
  forbidden: {
    code: 'APP_FORBIDDEN',
    status: 403,
    // A scoped PAT that leaves the permission out is named as the reason, so the fix (a token with that scope) is plain.
    // A refusal by a rule rather than a permission (a data API method's) says why itself.
    message: (params: { permission: string, scopes?: readonly string[] } | { why: string, details?: ErrorDetails }) =>
      'why' in params
        ? params.why
        : params.scopes !== undefined && params.scopes.length > 0 && !params.scopes.includes(params.permission)
          ? `This needs the "${params.permission}" permission, and this personal access token is scoped to ${params.scopes.join(', ')}: make a token with the "${params.permission}" scope`
          : `This needs the "${params.permission}" permission`,
    details: (params) => 'why' in params ? params.details : { permission: params.permission },
    description: 'the caller lacks the permission this needs, named in `details.permission`, or the method\'s rule refuses it'
  },
  projectNotFound: { code: 'APP_PROJECT_NOT_FOUND', status: 404, message: 'Project not found', description: 'no such project, or the caller is not a member of its organization' },
  userNotFound: {
    code: 'APP_USER_NOT_FOUND',
    status: 404,
    message: (params?: { endUser: true }) => params === undefined ? 'No platform user with this id or e-mail address' : 'No end user with this id in the project',
    description: 'no platform user has this id or e-mail address (under a project: no end user has this id)'
  },
  organizationNotFound: { code: 'APP_ORGANIZATION_NOT_FOUND', status: 404, message: 'Organization not found', description: 'no such organization, or the caller is not a member' },
  routeNotFound: { code: 'APP_ROUTE_NOT_FOUND', status: 404, message: ({ method, path }: { method: string, path: string }) => `No route for ${method} ${path}`, description: 'no route has this path' },
  methodNotAllowed: {
    code: 'APP_METHOD_NOT_ALLOWED',
    status: 405,
    message: ({ method, path, allowed }: { method: string, path: string, allowed: string[] }) => `${method} is not allowed on ${path}; it takes ${allowed.join(', ')}`,
    description: 'the path does not take this method; Allow lists those it takes'
  },
  requestTimeout: { code: 'APP_REQUEST_TIMEOUT', status: 408, message: 'The request did not arrive in time', description: 'the request did not arrive in time' },
  payloadTooLarge: { code: 'APP_PAYLOAD_TOO_LARGE', status: 413, message: 'Request body is too large', description: 'the body is larger than the server takes' },
  uriTooLong: { code: 'APP_URI_TOO_LONG', status: 414, message: 'A segment of the URL path is too long', description: 'a segment of the path is too long' },
  unsupportedMediaType: {
    code: 'APP_UNSUPPORTED_MEDIA_TYPE',
    status: 415,
    message: (wanted?: { send: string }) => wanted?.send ?? 'Unsupported Content-Type; send application/json',
    description: 'the body is not of a type the route takes'
  },
  // A caller inside the server enqueued a job wrongly: the message names what.
  jobInvalid: { code: 'APP_JOB_INVALID', status: 400, message: ({ why }: { why: string }) => why, description: 'a job type, payload or timing is not valid' },
  sealedSecretMalformed: {
    code: 'APP_SEALED_SECRET_MALFORMED',
    status: 500,
    message: 'A stored secret is not in a format this server can read',
    description: 'a stored secret is not in a format this server can read'
  },
  sealedSecretRejected: {
    code: 'APP_SEALED_SECRET_REJECTED',
    status: 500,
    message: 'A stored secret failed authentication: it was altered, or sealed under another key or for another record',
    description: 'a stored secret failed authentication (altered, or sealed under another key or for another record)'
  },
  rateLimited: {
    code: 'APP_RATE_LIMITED',
    status: 429,
    message: ({ retryAfterSeconds }: { retryAfterSeconds: number }) => `Too many attempts; try again in ${retryAfterSeconds} s`,
    details: ({ retryAfterSeconds }) => ({ retryAfterSeconds }),
    description: 'too many attempts; Retry-After says when to try again'
  },
  headersTooLarge: { code: 'APP_HEADERS_TOO_LARGE', status: 431, message: 'The request line and headers are too large', description: 'the request line and headers are too large' },
  internal: { code: 'APP_INTERNAL', status: 500, message: 'Internal server error', description: 'a bug; its details stay in the server log' },
  shuttingDown: {
    code: 'APP_SHUTTING_DOWN',
    status: 503,
    message: 'The server is shutting down; retry the request',
    details: () => ({ retryAfterSeconds: 1 }),
    description: 'the server is draining; retry, on this node or another'
  },
  storeUnavailable: {
    code: 'APP_STORE_UNAVAILABLE',
    status: 503,
    message: ({ engine }: { engine: string }) => `The ${engine} store is not answering`,
    details: () => ({ retryAfterSeconds: 5 }),
    description: 'the store does not answer; Retry-After says when to try again'
  }
})

/** @deprecated for converted families: throw a catalogue's entry (`commonErrors.forbidden({ permission })`, `dnsErrors.zoneExists({ name })`). */
export const badRequest = (code: string, message: string, details?: ErrorDetails) => new AppError(code, 400, message, details)
/** @deprecated as badRequest. */
export const unauthorized = (code: string, message: string, details?: ErrorDetails) => new AppError(code, 401, message, details)
/** @deprecated as badRequest. */
export const forbidden = (code: string, message: string, details?: ErrorDetails) => new AppError(code, 403, message, details)
/** @deprecated as badRequest. */
export const notFound = (code: string, message: string, details?: ErrorDetails) => new AppError(code, 404, message, details)
/** @deprecated as badRequest. */
export const conflict = (code: string, message: string, details?: ErrorDetails) => new AppError(code, 409, message, details)
