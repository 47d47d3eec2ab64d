import type { Server } from 'node:http'
import type { FastifyHttpOptions, FastifySchema } from 'fastify'
import { Ajv, type Options as AjvOptions } from 'ajv'
import addFormatsModule from 'ajv-formats'
import type { Config } from './services/config.js'
import { newId } from './services/ids.js'
import { clientErrorHandler, frameworkErrors } from './plugins/errors.js'

// ajv-formats is CommonJS whose default export is the function itself.
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default

const AJV_BASE: AjvOptions = {
  strict: false,
  // Unknown fields are refused by schemas that forbid them rather than dropped silently.
  removeAdditional: false,
  useDefaults: true,
  allErrors: false
}

/**
 * Query strings, params and headers arrive as text, so they are coerced to
 * their schema types; JSON bodies already carry types, and coercing them would
 * turn `5` into `"5"` where a string is required instead of refusing it.
 */
function buildValidator (externalSchemas: Record<string, unknown> = {}) {
  const make = (coerceTypes: AjvOptions['coerceTypes']): Ajv => {
    const ajv = new Ajv({ ...AJV_BASE, coerceTypes })
    addFormats(ajv)
    for (const schema of Object.values(externalSchemas)) ajv.addSchema(schema as object)
    return ajv
  }
  const strict = make(false)
  const coercing = make('array')
  return ({ schema, httpPart }: { schema: FastifySchema, httpPart?: string }) =>
    (httpPart === 'body' ? strict : coercing).compile(schema as object)
}

// Request ids only tie log lines together: a per-process random prefix keeps them
// distinct across API nodes, and a counter keeps them off the per-request hot path.
function requestIdGenerator (): () => string {
  const processPrefix = newId().slice(-8)
  let counter = 0
  return () => `${processPrefix}-${(++counter).toString(36)}`
}

/**
 * Node enforces the header and request limits in a periodic sweep (30 s by
 * default, which would let a stalled client outlive a 20 s limit by half a
 * minute): sweeping at a quarter of the header limit drops it soon after.
 */
function sweepInterval (headersMs: number): number {
  return Math.max(250, Math.min(5000, Math.floor(headersMs / 4)))
}

/**
 * Fastify 5 turned a numeric trustProxy into "trust nobody", since a hop count
 * cannot tell a proxy from a client that reaches the server directly; the
 * count is kept here, as a trust function, for servers reachable only through
 * their proxies (the README says so), and addresses are the safe default.
 */
function trustProxyOption (setting: Config['trustProxy']): PlinthServerOptions['trustProxy'] {
  if (typeof setting !== 'number') return setting
  return (_address: string, hop: number) => hop < setting
}

export type PlinthServerOptions = FastifyHttpOptions<Server>

/**
 * The one factory for Fastify's options, shared by the server, the tests and
 * the OpenAPI generator so all three validate, serialize and answer parser
 * errors identically and keep the same limits on slow clients.
 */
export function fastifyOptions (config: Pick<Config, 'logLevel' | 'bodyLimit' | 'timeouts' | 'trustProxy'>, overrides: Partial<PlinthServerOptions> = {}): PlinthServerOptions {
  const { timeouts } = config
  const headersMs = timeouts.headersSeconds * 1000
  const requestMs = timeouts.requestSeconds * 1000
  return {
    logger: config.logLevel === 'silent' ? false : { level: config.logLevel },
    bodyLimit: config.bodyLimit,
    genReqId: requestIdGenerator(),
    requestIdHeader: false,
    // The errors plugin answers requests that arrive while the server drains, in the envelope (Fastify's own 503 is not).
    return503OnClosing: false,
    connectionTimeout: timeouts.connectionSeconds * 1000,
    requestTimeout: requestMs,
    keepAliveTimeout: timeouts.keepAliveSeconds * 1000,
    // The request limit again: Node checks the header limit against it when the server is made, before Fastify sets it.
    http: { headersTimeout: headersMs, requestTimeout: requestMs, connectionsCheckingInterval: sweepInterval(headersMs) },
    trustProxy: trustProxyOption(config.trustProxy),
    // `/api/organizations/` is `/api/organizations`: the contract spells paths without the slash, and clients that add one get the same answer.
    routerOptions: { ignoreTrailingSlash: true },
    frameworkErrors,
    clientErrorHandler,
    // Fastify's typings model only its bundled compiler; the runtime contract is (schemas) => ({ schema, httpPart }) => validate.
    schemaController: { compilersFactory: { buildValidator } } as unknown as PlinthServerOptions['schemaController'],
    ...overrides
  }
}
