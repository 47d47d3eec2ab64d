import type { Test } from 'tap'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { TrackerSetup } from '../tracker/fixtures.js'

export interface ToolAnswer { isError?: boolean, structuredContent?: any, content: Array<{ type: string, text?: string }> }

/** The SDK's own client over HTTP to the listening app's MCP server, with `token` as its bearer credential. */
export async function mcpClient (t: Test, s: Pick<TrackerSetup, 'app' | 'base'>, token: string) {
  const address = s.app.server.address()
  if (address === null || typeof address === 'string') throw new Error('not listening')
  const client = new Client({ name: 'plinth-test', version: '1.0.0' })
  await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${address.port}${s.base}/mcp`), { requestInit: { headers: { authorization: `Bearer ${token}` } } }))
  t.teardown(async () => { await client.close() })
  const call = async (name: string, args: object): Promise<ToolAnswer> => await client.callTool({ name, arguments: args as Record<string, unknown> }) as ToolAnswer
  const names = async (): Promise<string[]> => (await client.listTools()).tools.map((tool) => tool.name)
  return { client, call, names }
}

/** A refused call's envelope, as the tool error carries it. */
export const refusalOf = (answer: ToolAnswer) => JSON.parse(answer.content[0].text ?? '{}') as { success: boolean, code: string, message: string, details?: any }
