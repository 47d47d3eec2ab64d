import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError, type CallToolResult, type Tool } from '@modelcontextprotocol/sdk/types.js'
import type { TSchema } from '@sinclair/typebox'
import { AppError } from '../platform/errors.js'
import { needsApproval, type ToolCaller, type ToolDefinition, type ToolRegistry } from './registry.js'

/**
 * A schema as an MCP client reads it: plain JSON, without the `$id`s the
 * HTTP layer registers views under (a client compiles each tool's schema on
 * its own, and the same view appears in several).
 */
function plainSchema (schema: TSchema): Tool['inputSchema'] {
  return JSON.parse(JSON.stringify(schema, (key, value: unknown) => key === '$id' ? undefined : value))
}

function describeTool (tool: ToolDefinition<TSchema, TSchema, unknown>): Tool {
  return {
    name: tool.name,
    title: tool.title,
    description: tool.description,
    inputSchema: plainSchema(tool.input),
    outputSchema: plainSchema(tool.output),
    // The assistant's approval rule is MCP's destructive hint: a client confirms what the assistant asks a person for.
    annotations: { title: tool.title, readOnlyHint: tool.risk === 'read', destructiveHint: needsApproval(tool), openWorldHint: false },
    _meta: { 'plinth/permission': tool.permission, 'plinth/risk': tool.risk }
  }
}

/** A refusal as an MCP tool error: the platform's envelope, as text for a model and structured for a program. */
function toolError (error: AppError): CallToolResult {
  const body = { success: false, message: error.message, code: error.code, ...(error.details === undefined ? {} : { details: error.details }) }
  return { isError: true, content: [{ type: 'text', text: JSON.stringify(body) }] }
}

/**
 * An MCP server offering a registry's tools to one caller: tools/list lists
 * those the caller may call now (a read-only PAT sees the read tools), with
 * their permission and read-only/destructive hints, and each tools/call goes
 * through the registry, which re-checks the caller's access.
 * A refusal is a tool error (`isError`) carrying the platform code and
 * message; anything else is the server's bug, a JSON-RPC internal error.
 */
export function mcpServer<C> (registry: ToolRegistry<C>, caller: ToolCaller, info: { name: string, version: string }): Server {
  const server = new Server(info, { capabilities: { tools: {} } })
  server.setRequestHandler(ListToolsRequestSchema, async () => {
    const tools = await registry.available(caller)
    return { tools: tools.map((tool) => describeTool(tool as ToolDefinition<TSchema, TSchema, unknown>)) }
  })
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const { name, arguments: args } = request.params
    if (registry.get(name) === undefined) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${name}`)
    try {
      const result = await registry.call(name, caller, args ?? {}) as Record<string, unknown>
      return { content: [{ type: 'text', text: JSON.stringify(result) }], structuredContent: result }
    } catch (error) {
      if (error instanceof AppError) return toolError(error)
      throw error
    }
  })
  return server
}
