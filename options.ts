import type { Server } from 'node:http'
import type { FastifyHttpOptions, FastifySchema } from 'fastify'
import { Ajv, type Options as AjvOptions } from 'ajv'
import type { DataValidationCxt } from 'ajv/dist/types/index.js'
import addFormatsModule from 'ajv-formats'
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler'
import type { Config } from './services/config.js'
import { newId } from './services/platform/ids.js'
import { BoundedMap } from './services/cache/bounded-map.js'
import { clientErrorHandler, frameworkErrors } from './plugins/errors.js'
import { PlinthIncomingMessage } from './http/upgrade-requests.js'

// ajv-formats is CommonJS whose default export is the function itself.
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default

const AJV_BASE: AjvOptions = {
  strict: false,
  // Unknown fields are refused by schemas that forbid them rather than dropped silently.
  removeAdditional: false,
  useDefaults: true,
  allErrors: false
}

/** A validate function as Fastify calls it: Ajv's, whose `errors` it reads after a false answer. */
interface Validate {
  (data: unknown, context?: DataValidationCxt): unknown
  errors?: unknown
  schemaEnv?: unknown
}

/**
 * Compiling every route's schemas when the app starts costs seconds of CPU
 * (a few hundred routes, each with request validators and a serializer per
 * response status), most of it for routes a process may never answer. Each is
 * compiled on its first use instead. `compileAllSchemas` compiles the ones left,
 * so a schema neither compiler takes still fails a test (test/options.test.ts).
 */
class LazySchemas {
  private readonly pending: Array<() => void> = []

  validator (compile: () => Validate): Validate {
    let compiled: Validate | null = null
    const validate: Validate = (data, context) => {
      compiled ??= compile()
      const valid = compiled(data, context)
      validate.errors = compiled.errors
      return valid
    }
    // Fastify hands Ajv's functions the parent object (so coercion and defaults can replace a root value) when this is set.
    validate.schemaEnv = true
    this.pending.push(() => { compiled ??= compile() })
    return validate
  }

  serializer (compile: () => Serialize): Serialize {
    let compiled: Serialize | null = null
    this.pending.push(() => { compiled ??= compile() })
    return (data) => (compiled ??= compile())(data)
  }

  compileAll (): number {
    const count = this.pending.length
    for (const compile of this.pending.splice(0)) compile()
    return count
  }
}

type Serialize = (data: unknown) => string

const lazySchemasOf = new WeakMap<object, LazySchemas>()

/** Compiles every schema an app made from these options has not used yet; the count it compiled. */
export function compileAllSchemas (options: PlinthServerOptions): number {
  return lazySchemasOf.get(options)?.compileAll() ?? 0
}

/**
 * Query strings, params and headers arrive as text, so they are coerced to
 * their schema types; JSON bodies already carry types, and coercing them would
 * turn `5` into `"5"` where a string is required instead of refusing it.
 */
function validatorFactory (lazy: LazySchemas) {
  return (externalSchemas: Record<string, unknown> = {}) => {
    const make = (coerceTypes: AjvOptions['coerceTypes']): Ajv => {
      const ajv = new Ajv({ ...AJV_BASE, coerceTypes })
      addFormats(ajv)
      for (const schema of Object.values(externalSchemas)) ajv.addSchema(schema as object)
      return ajv
    }
    let strict: Ajv | null = null
    let coercing: Ajv | null = null
    const shared = sharedSchemasKey(externalSchemas)
    return ({ schema, httpPart }: { schema: FastifySchema, httpPart?: string }): Validate => lazy.validator(() => {
      const body = httpPart === 'body'
      return compiledOnce(compiledValidators, `${body ? 'body' : 'coerced'}\n${shared()}\n${JSON.stringify(schema)}`, () => body
        ? (strict ??= make(false)).compile(schema as object)
        : (coercing ??= make('array')).compile(schema as object))
    })
  }
}

/**
 * A validator or a serializer is a pure function of its schema, the context's
 * shared schemas and the compiler's options, and every app a process builds
 * (a test file builds dozens, each with a few hundred routes) compiles the
 * same ones: each is compiled once per process under that key, by whichever
 * app asks first. Routes are only added before an app starts, so the keys are
 * the app's own schemas; the bound only keeps a process of many apps in check.
 */
const COMPILED_PER_PROCESS = 4096
const compiledValidators = new BoundedMap<string, Validate>(COMPILED_PER_PROCESS)
const compiledSerializers = new BoundedMap<string, Serialize>(COMPILED_PER_PROCESS)
// Each shared schema's text stands in a key as a short number, read once per object: Fastify copies the shared
// schemas into every app (and hands each context a new record of the same objects), tens of kilobytes together.
const textNumbers = new Map<string, number>()
const objectNumbers = new WeakMap<object, number>()

function contentNumber (value: unknown): number {
  const known = typeof value === 'object' && value !== null ? objectNumbers.get(value) : undefined
  if (known !== undefined) return known
  const text = JSON.stringify(value) ?? 'undefined'
  let number = textNumbers.get(text)
  if (number === undefined) textNumbers.set(text, number = textNumbers.size)
  if (typeof value === 'object' && value !== null) objectNumbers.set(value, number)
  return number
}

/** The key part that names a context's shared schemas (and the compiler's options), worked out once, on its first compile. */
function sharedSchemasKey (externalSchemas: Record<string, unknown>, options: object = {}): () => string {
  let key: string | null = null
  return () => (key ??= [contentNumber(options), ...Object.entries(externalSchemas).map(([id, schema]) => `${id}=${contentNumber(schema)}`)].join(','))
}

function compiledOnce<F> (compiled: BoundedMap<string, F>, key: string, compile: () => F): F {
  const known = compiled.get(key)
  if (known !== undefined) return known
  const made = compile()
  compiled.set(key, made)
  return made
}

type JsonSchema = Record<string, unknown>

function asSchema (value: unknown): JsonSchema | null {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? value as JsonSchema : null
}

/**
 * fast-json-stringify picks a union's branch by validating the value against
 * each branch in turn, so a page of work items (items or, in a sync page,
 * tombstones) had every item validated whole, formats and all, before it was
 * written out: most of the time of serializing it. A union of two object
 * schemas, one requiring a property the other does not declare (a tombstone's
 * `deleted`), is told apart by that property alone (`if`/`then`/`else`, which
 * validates only the `if`). The route's own schema, which the contract shows,
 * is left as it is.
 */
export function serializedUnions (schema: unknown, external: Record<string, unknown>): unknown {
  const node = asSchema(schema)
  if (node === null) return Array.isArray(schema) ? schema.map((item) => serializedUnions(item, external)) : schema
  const resolve = (branch: unknown): JsonSchema | null => {
    const ref = asSchema(branch)?.$ref
    return asSchema(typeof ref === 'string' ? external[ref] : branch)
  }
  const union = node.anyOf
  if (Array.isArray(union) && union.length === 2) {
    const [first, second] = union.map(resolve)
    const marker = (own: JsonSchema | null, other: JsonSchema | null): string | undefined => {
      const required = own?.required
      const declared = asSchema(other?.properties)
      if (own?.type !== 'object' || other?.type !== 'object' || !Array.isArray(required) || declared === null) return undefined
      return required.find((field): field is string => typeof field === 'string' && !Object.hasOwn(declared, field))
    }
    const [withMarker, without, field] = marker(first, second) !== undefined ? [union[0], union[1], marker(first, second)] : [union[1], union[0], marker(second, first)]
    if (field !== undefined) {
      const { anyOf: _anyOf, ...rest } = node
      return { ...rest, if: { type: 'object', required: [field] }, then: serializedUnions(withMarker, external), else: serializedUnions(without, external) }
    }
  }
  return Object.fromEntries(Object.entries(node).map(([key, value]) => [key, key === 'properties' || key === 'patternProperties'
    ? Object.fromEntries(Object.entries(asSchema(value) ?? {}).map(([name, inner]) => [name, serializedUnions(inner, external)]))
    : key === 'items' || key === 'anyOf' || key === 'oneOf' || key === 'allOf' ? serializedUnions(value, external) : value]))
}

/**
 * Routes answer with a few hundred distinct schemas through a few thousand
 * route and status pairs (every route's 4xx is the same error envelope), and a
 * serializer depends on its schema, the context's shared schemas and the
 * serializer options alone: one is compiled per distinct schema, not per route
 * and status (and, as validators, once per process: compiledOnce).
 */
function serializerFactory (lazy: LazySchemas) {
  return (externalSchemas: Record<string, unknown> = {}, serializerOptions: object = {}) => {
    const compile = SerializerSelector()(externalSchemas, serializerOptions)
    const shared = sharedSchemasKey(externalSchemas, serializerOptions)
    return (route: { schema: object, method: string, url: string, httpStatus: string }): Serialize =>
      lazy.serializer(() => {
        const schema = serializedUnions(route.schema, externalSchemas) as object
        return compiledOnce(compiledSerializers, `${shared()}\n${JSON.stringify(schema)}`, () => compile({ ...route, schema }))
      })
  }
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
export function sweepInterval (headersMs: number): number {
  return Math.max(250, Math.min(5000, Math.floor(headersMs / 4)))
}

/**
 * Fastify 5 turned a numeric trustProxy into "trust nobody", since a hop count
 * cannot tell a proxy from a client that reaches the server directly; the
 * count is kept here, as a trust function, for servers reachable only through
 * their proxies (docs/operations.md says so), and addresses are the safe default.
 */
function trustProxyOption (setting: Config['trustProxy']): PlinthServerOptions['trustProxy'] {
  if (typeof setting !== 'number') return setting
  return (_address: string, hop: number) => hop < setting
}

export type PlinthServerOptions = FastifyHttpOptions<Server>

/** Each plugin's time to start, beyond the wait for MongoDB (Fastify's own default). */
const PLUGIN_TIMEOUT_SECONDS = 10

/**
 * The one factory for Fastify's options, shared by the server, the tests and
 * the OpenAPI generator so all three validate, serialize and answer parser
 * errors identically and keep the same limits on slow clients.
 */
export function fastifyOptions (config: Pick<Config, 'logLevel' | 'bodyLimit' | 'timeouts' | 'trustProxy'> & Partial<Pick<Config, 'mongodbConnectTimeoutSeconds'>>, overrides: Partial<PlinthServerOptions> = {}): PlinthServerOptions {
  const { timeouts } = config
  const headersMs = timeouts.headersSeconds * 1000
  const requestMs = timeouts.requestSeconds * 1000
  const lazy = new LazySchemas()
  const options: PlinthServerOptions = {
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
    // The request class lets only the realtime WebSocket handshake reach the upgrade listener (http/upgrade-requests.ts).
    http: { headersTimeout: headersMs, requestTimeout: requestMs, connectionsCheckingInterval: sweepInterval(headersMs), IncomingMessage: PlinthIncomingMessage },
    trustProxy: trustProxyOption(config.trustProxy),
    // `/api/organizations/` is `/api/organizations`: the contract spells paths without the slash, and clients that add one get the same answer.
    routerOptions: { ignoreTrailingSlash: true },
    frameworkErrors,
    clientErrorHandler,
    // The store plugin waits up to MONGODB_CONNECT_TIMEOUT_SECONDS for MongoDB and then fails with a message naming
    // MONGODB_URL; Fastify's default 10 s would cut that wait short with a bare "plugin did not start in time".
    pluginTimeout: ((config.mongodbConnectTimeoutSeconds ?? 0) + PLUGIN_TIMEOUT_SECONDS) * 1000,
    // Fastify's typings model only its bundled compilers; the runtime contract is (schemas) => (route) => validate / serialize.
    schemaController: { compilersFactory: { buildValidator: validatorFactory(lazy), buildSerializer: serializerFactory(lazy) } } as unknown as PlinthServerOptions['schemaController'],
    ...overrides
  }
  lazySchemasOf.set(options, lazy)
  return options
}
