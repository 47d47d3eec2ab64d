import type { FastifyServerOptions, FastifySchema } from 'fastify'
import { Ajv, type Options as AjvOptions } from 'ajv'
import addFormatsModule from 'ajv-formats'
import type { Config } from './services/config.js'
import { newId } from './services/ids.js'
import { frameworkErrorReply } from './plugins/errors.js'

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
 * The one factory for Fastify's options, shared by the server, the tests and
 * the OpenAPI generator so all three validate and serialize identically.
 */
export function fastifyOptions (config: Pick<Config, 'logLevel' | 'bodyLimit'>, overrides: Partial<FastifyServerOptions> = {}): FastifyServerOptions {
  return {
    logger: config.logLevel === 'silent' ? false : { level: config.logLevel },
    bodyLimit: config.bodyLimit,
    genReqId: requestIdGenerator(),
    requestIdHeader: false,
    return503OnClosing: true,
    frameworkErrors: frameworkErrorReply,
    // Fastify's typings model only its bundled compiler; the runtime contract is (schemas) => ({ schema, httpPart }) => validate.
    schemaController: { compilersFactory: { buildValidator } } as unknown as FastifyServerOptions['schemaController'],
    ...overrides
  }
}
