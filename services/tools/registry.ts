import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv'
import addFormatsModule from 'ajv-formats'
import type { Static, TSchema } from '@sinclair/typebox'
import { commonErrors } from '../platform/errors.js'
import type { Permission } from '../orgs/catalogue.js'
import { permissionMissing } from '../orgs/resolver.js'

// ajv-formats is CommonJS whose default export is the function itself.
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default

/** Who calls a tool: a platform user (by JWT or PAT, with a PAT's scopes) in a platform project. */
export interface ToolCaller {
  userId: string
  /** A scoped PAT's scopes: the caller holds only these of their permissions. */
  scopes?: string[]
  projectId: string
}

/** What the caller may do in the platform project, as the one resolver says at the moment of the call. */
export interface ToolAccess {
  permissions: ReadonlySet<string>
  scopes?: readonly string[]
}

/** Reads the caller's current access to the project; null when they may not see it. Called on every tool call. */
export type ToolAccessPort = (caller: ToolCaller) => Promise<ToolAccess | null>

/** One operation a tool may call, declared once for every protocol that offers it (MCP, the assistant). */
export interface ToolDefinition<I extends TSchema = TSchema, O extends TSchema = TSchema, C = unknown> {
  /** snake_case, unique: what a model or an MCP client calls it by. */
  name: string
  title: string
  description: string
  /** The input, built from the very schemas the REST route validates. */
  input: I
  /** The answer: the view schema the REST route answers with (as its envelope's `data`). */
  output: O
  /** The platform permission the caller needs in the project, checked before the handler on every call. */
  permission: Permission
  /** Only reads. */
  readOnly: boolean
  /** Removes or hides something (archive, remove, transfer): a client should confirm first. */
  destructive: boolean
  /** Runs the operation; the family's context (its services and the caller's current role) comes from the registry's owner. */
  run: (context: C, input: Static<I>) => Promise<Static<O>>
}

/** A definition with its input validator compiled. */
interface RegisteredTool<C> {
  definition: ToolDefinition<TSchema, TSchema, C>
  validate: ValidateFunction
}

/** How a family turns a caller with current access into its tools' context (the tracker: its services and the caller's role). */
export type ContextOf<C> = (caller: ToolCaller, access: ToolAccess) => C

function issuePath (issue: ErrorObject): string {
  const segments = issue.instancePath.split('/').filter(Boolean).map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
  const missing = issue.params.missingProperty ?? issue.params.additionalProperty
  if (typeof missing === 'string') segments.push(missing)
  return ['input', ...segments].join('.')
}

function issueMessage (issue: ErrorObject): string {
  if (typeof issue.params.additionalProperty === 'string') return 'is not an allowed field'
  if (typeof issue.params.missingProperty === 'string') return 'is required'
  return issue.message ?? 'is invalid'
}

/**
 * The one registry of the operations tools may call. Each call validates
 * its input against the declared schema, re-reads the caller's access (a
 * permission revoked a second ago, or a PAT's scopes, count at once) and
 * refuses with the platform's own codes (`AppError`), which each protocol
 * renders in its terms.
 */
export class ToolRegistry<C> {
  private readonly tools = new Map<string, RegisteredTool<C>>()
  // The same options as the HTTP layer's body validator (options.ts): nothing coerced, unknown fields refused by the schemas.
  private readonly ajv = new Ajv({ strict: false, removeAdditional: false, useDefaults: true, allErrors: false, coerceTypes: false })

  constructor (private readonly deps: { access: ToolAccessPort, context: ContextOf<C> }) {
    addFormats(this.ajv)
  }

  add<I extends TSchema, O extends TSchema> (definition: ToolDefinition<I, O, C>): void {
    if (this.tools.has(definition.name)) throw new Error(`tool '${definition.name}' is declared twice`)
    this.tools.set(definition.name, { definition: definition as unknown as ToolDefinition<TSchema, TSchema, C>, validate: this.ajv.compile(definition.input) })
  }

  list (): Array<ToolDefinition<TSchema, TSchema, C>> {
    return [...this.tools.values()].map((tool) => tool.definition)
  }

  /** The tools `caller` may call at this moment (their current permissions, a PAT's scopes); none when they may not see the project. */
  async available (caller: ToolCaller): Promise<Array<ToolDefinition<TSchema, TSchema, C>>> {
    const access = await this.deps.access(caller)
    if (access === null) return []
    return this.list().filter((tool) => access.permissions.has(tool.permission))
  }

  get (name: string): ToolDefinition<TSchema, TSchema, C> | undefined {
    return this.tools.get(name)?.definition
  }

  /** Whether `caller` holds, now, the permission `name` needs (the assistant's approver of a destructive call). */
  async permits (name: string, caller: ToolCaller): Promise<boolean> {
    const tool = this.tools.get(name)
    if (tool === undefined) return false
    const access = await this.deps.access(caller)
    return access !== null && access.permissions.has(tool.definition.permission)
  }

  /** Runs `name` for `caller`: validation, the current access check, then the handler. */
  async call (name: string, caller: ToolCaller, input: unknown): Promise<unknown> {
    const tool = this.tools.get(name)
    if (tool === undefined) throw commonErrors.validationFailed({ fields: [{ path: 'name', message: `is not a tool (${name})` }] })
    // Defaults are written into the input: validate a copy, never the caller's object.
    const args = structuredClone(input ?? {})
    if (!tool.validate(args)) {
      throw commonErrors.validationFailed({ fields: (tool.validate.errors ?? []).map((issue) => ({ path: issuePath(issue), message: issueMessage(issue) })) })
    }
    const access = await this.deps.access(caller)
    if (access === null) throw commonErrors.projectNotFound()
    if (!access.permissions.has(tool.definition.permission)) throw permissionMissing(tool.definition.permission, access.scopes)
    return await tool.definition.run(this.deps.context(caller, access), args as never)
  }
}
