import t from 'tap'
import { readFileSync } from 'node:fs'
import { Value } from '@sinclair/typebox/value'
import { ConfigError } from '../../../services/platform/config-env.js'
import { AssistantConfig, parseAssistantConfig } from '../../../services/assistant/config.js'

function variables (schema: Record<string, unknown>): string[] {
  const own = typeof schema.variable === 'string' ? [schema.variable] : []
  const properties = Object.values((schema.properties ?? {}) as Record<string, Record<string, unknown>>)
  return [...own, ...properties.flatMap(variables)]
}

const full = { ASSISTANT_MAX_RUN_SECONDS: '90', ASSISTANT_MAX_TOOL_OUTPUT_BYTES: '4096' }

function refusal (env: Record<string, string>): unknown {
  try {
    parseAssistantConfig(env)
    return null
  } catch (caught) {
    return caught
  }
}

t.test('the assistant\'s parser gives what the schema describes, defaults and all', async (t) => {
  for (const env of [{}, full]) t.ok(Value.Check(AssistantConfig, parseAssistantConfig(env)), JSON.stringify(env))
  t.same(variables(AssistantConfig).sort(), Object.keys(full).sort(), 'each setting names the one variable it is read from')
  t.same(parseAssistantConfig(full), { maxWallMs: 90_000, maxToolOutputBytes: 4096 })
  t.same(parseAssistantConfig({}), { maxWallMs: 300_000, maxToolOutputBytes: 65_536 })
  t.same(parseAssistantConfig({ ASSISTANT_MAX_RUN_SECONDS: '1', ASSISTANT_MAX_TOOL_OUTPUT_BYTES: '1024' }), { maxWallMs: 1000, maxToolOutputBytes: 1024 }, 'the lowest values allowed')
  t.same(parseAssistantConfig({ ASSISTANT_MAX_RUN_SECONDS: '3600', ASSISTANT_MAX_TOOL_OUTPUT_BYTES: String(16 * 1024 * 1024) }), { maxWallMs: 3_600_000, maxToolOutputBytes: 16 * 1024 * 1024 }, 'the highest values allowed')
})

t.test('each assistant variable is in the README\'s configuration table, and a bad value is refused naming it', async (t) => {
  const readme = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8')
  const table = readme.slice(readme.indexOf('## Configuration'), readme.indexOf('\n## ', readme.indexOf('## Configuration') + 1))
  for (const variable of variables(AssistantConfig)) t.ok(table.includes(`\`${variable}\``), `${variable} is documented`)
  const bad: Array<[string, string]> = [
    ['ASSISTANT_MAX_RUN_SECONDS', '0'],
    ['ASSISTANT_MAX_RUN_SECONDS', '3601'],
    ['ASSISTANT_MAX_RUN_SECONDS', 'five'],
    ['ASSISTANT_MAX_RUN_SECONDS', '1.5'],
    ['ASSISTANT_MAX_TOOL_OUTPUT_BYTES', '1023'],
    ['ASSISTANT_MAX_TOOL_OUTPUT_BYTES', String(16 * 1024 * 1024 + 1)],
    ['ASSISTANT_MAX_TOOL_OUTPUT_BYTES', '64k']
  ]
  for (const [variable, value] of bad) {
    const error = refusal({ [variable]: value })
    t.ok(error instanceof ConfigError && error.variable === variable && error.message.startsWith(`Invalid configuration: ${variable} `), `${variable}=${value} is refused, naming it`)
  }
})
