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
  /** The request behind the call, for the audit log; absent in tests that call the registry directly. */
  origin?: ToolOrigin
}

/** Where a call came from: the protocol, and the credential and address of the request that led to it. */
export interface ToolOrigin {
  channel: 'mcp' | 'assistant'
  credential: 'session' | 'pat'
  address: string
}

/** A call that changed something (a tool whose risk is not `read`), as its listeners hear of it once it succeeded. */
export interface ToolChange {
  tool: string
  caller: ToolCaller
  /** The names of the fields the input set, never their values. */
  fields: string[]
  /** The tool's answer, for the id of what it made or changed; listeners keep none of its values. */
  result: unknown
}

/** What the caller may do in the platform project, as the one resolver says at the moment of the call. */
export interface ToolAccess {
  permissions: ReadonlySet<string>
  scopes?: readonly string[]
}

/** Reads the caller's current access to the project; null when they may not see it. Called on every tool call. */
export type ToolAccessPort = (caller: ToolCaller) => Promise<ToolAccess | null>

/**
 * How far a tool's call reaches: the one rule deciding, for every protocol, whether a person agrees first.
 * - `read`: reads only.
 * - `write`: changes the team's own workspace (tracker items and their comments, links and cycles; a merge request
 *   opened or commented): attributed to the caller, in the activity, undone by another write. No approval: filing and
 *   triaging is what the assistant is for, and each step shows where the team works.
 * - `critical`: removes or hides something (archive, remove from a cycle, transfer), grants access (a member added),
 *   or changes what the project's apps serve or run (records, deployments): the assistant waits for a person's
 *   approval, and MCP marks it destructive so a client confirms.
 */
export type ToolRisk = 'read' | 'write' | 'critical'

/** Whether a call of the tool waits for a person (the assistant's approvals; MCP's `destructiveHint`). */
export function needsApproval (tool: { risk: ToolRisk }): boolean {
  return tool.risk === 'critical'
}

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
  /**
   * Where the route decides access below the project (a repository's role
   * counts as the project's permissions do): whether the caller holds
   * `permission` anywhere in the project now, for offering the tool and
   * letting a call through to its handler, which then makes the route's own
   * check on the one thing it acts on.
   */
  heldBelow?: (context: C) => Promise<boolean>
  /** How far a call reaches, and so whether a person approves it first (`ToolRisk`). */
  risk: ToolRisk
  /** Runs the operation; the family's context (its services and the caller's current role) comes from the registry's owner. */
  run: (context: C, input: Static<I>) => Promise<Static<O>>
}

// The same options as the HTTP layer's body validator (options.ts): nothing coerced, unknown fields refused by the schemas.
// One instance for every registry in the process: ajv keeps each schema object's compiled validator, and the tools'
// inputs are module constants, so an app built after the first (a test file builds dozens) compiles none of them again.
const toolInputs = new Ajv({ strict: false, removeAdditional: false, useDefaults: true, allErrors: false, coerceTypes: false })
addFormats(toolInputs)

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
  private readonly changeListeners: Array<(change: ToolChange) => Promise<void>> = []
  constructor (private readonly deps: { access: ToolAccessPort, context: ContextOf<C> }) {}

  add<I extends TSchema, O extends TSchema> (definition: ToolDefinition<I, O, C>): void {
    if (this.tools.has(definition.name)) throw new Error(`tool '${definition.name}' is declared twice`)
    // Approving checks the approver's permission as `heldBelow` does: anywhere in the project, not on the call's own
    // target, so a critical tool must not have it (a reader of one repository would approve an act on another).
    if (definition.risk === 'critical' && definition.heldBelow !== undefined) throw new Error(`tool '${definition.name}': a critical tool cannot count its permission below the project (heldBelow)`)
    this.tools.set(definition.name, { definition: definition as unknown as ToolDefinition<TSchema, TSchema, C>, validate: toolInputs.compile(definition.input) })
  }

  /**
   * `listener` hears of every successful call that may have changed
   * something, before the call answers (the audit log: a change acknowledged
   * to a model or an MCP client always has its entry).
   */
  onChange (listener: (change: ToolChange) => Promise<void>): void {
    this.changeListeners.push(listener)
  }

  list (): Array<ToolDefinition<TSchema, TSchema, C>> {
    return [...this.tools.values()].map((tool) => tool.definition)
  }

  /** The tools `caller` may call at this moment (their current permissions, a PAT's scopes); none when they may not see the project. */
  async available (caller: ToolCaller): Promise<Array<ToolDefinition<TSchema, TSchema, C>>> {
    const access = await this.deps.access(caller)
    if (access === null) return []
    const held = await Promise.all(this.list().map(async (tool) => await this.holds(tool, caller, access)))
    return this.list().filter((_tool, index) => held[index])
  }

  get (name: string): ToolDefinition<TSchema, TSchema, C> | undefined {
    return this.tools.get(name)?.definition
  }

  /** Whether `caller` holds, now, the permission `name` needs (the assistant's approver of a destructive call). */
  async permits (name: string, caller: ToolCaller): Promise<boolean> {
    const tool = this.tools.get(name)
    if (tool === undefined) return false
    const access = await this.deps.access(caller)
    return access !== null && await this.holds(tool.definition, caller, access)
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
    if (!await this.holds(tool.definition, caller, access)) throw permissionMissing(tool.definition.permission, access.scopes)
    const result = await tool.definition.run(this.deps.context(caller, access), args as never)
    if (tool.definition.risk !== 'read') {
      const fields = Object.keys(args as Record<string, unknown>).sort()
      for (const listener of this.changeListeners) await listener({ tool: name, caller, fields, result })
    }
    return result
  }

  /** The tool's permission held now: in the project, or where its route also looks (`heldBelow`). */
  private async holds (tool: ToolDefinition<TSchema, TSchema, C>, caller: ToolCaller, access: ToolAccess): Promise<boolean> {
    if (access.permissions.has(tool.permission)) return true
    return tool.heldBelow !== undefined && await tool.heldBelow(this.deps.context(caller, access))
  }
}
