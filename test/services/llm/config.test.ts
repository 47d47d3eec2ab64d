import t from 'tap'
import { readFileSync } from 'node:fs'
import { Value } from '@sinclair/typebox/value'
import { ConfigError } from '../../../services/platform/config-env.js'
import { LlmConfig, parseLlmConfig } from '../../../services/llm/config.js'

function variables (schema: Record<string, unknown>): string[] {
  const own = typeof schema.variable === 'string' ? [schema.variable] : []
  const properties = Object.values((schema.properties ?? {}) as Record<string, Record<string, unknown>>)
  return [...own, ...properties.flatMap(variables)]
}

const full = {
  LLM_ALLOWED_HOSTS: 'Ollama.Internal., *.corp.example, 127.0.0.1, [::1], 10.0.0.0/8',
  LLM_TIMEOUT_SECONDS: '30',
  LLM_DEFAULT_MAX_OUTPUT_TOKENS: '8192',
  LLM_DEFAULT_MAX_TOOL_STEPS: '20'
}

t.test('the parser gives what the schema describes, defaults and all', async (t) => {
  for (const env of [{}, full]) t.ok(Value.Check(LlmConfig, parseLlmConfig(env)), JSON.stringify(env))
  t.same(variables(LlmConfig).sort(), Object.keys(full).sort(), 'each setting names the one variable it is read from')
  t.same(parseLlmConfig(full), { allowedHosts: ['ollama.internal', '*.corp.example', '127.0.0.1', '::1', '10.0.0.0/8'], timeoutMs: 30_000, defaultMaxOutputTokens: 8192, defaultMaxToolSteps: 20 })
  t.same(parseLlmConfig({}), { allowedHosts: [], timeoutMs: 15_000, defaultMaxOutputTokens: 4096, defaultMaxToolSteps: 10 })
})

t.test('each variable is in the README\'s configuration table, and a bad value names it', async (t) => {
  const readme = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8')
  const table = readme.slice(readme.indexOf('## Configuration'), readme.indexOf('\n## ', readme.indexOf('## Configuration') + 1))
  for (const variable of variables(LlmConfig)) t.ok(table.includes(`\`${variable}\``), `${variable} is documented`)
  const bad: Record<string, string> = {
    LLM_ALLOWED_HOSTS: 'http://ollama.internal:11434',
    LLM_TIMEOUT_SECONDS: '0',
    LLM_DEFAULT_MAX_OUTPUT_TOKENS: 'lots',
    LLM_DEFAULT_MAX_TOOL_STEPS: '1000'
  }
  for (const [variable, value] of Object.entries(bad)) {
    const error = (() => { try { parseLlmConfig({ [variable]: value }) } catch (caught) { return caught } })()
    t.ok(error instanceof ConfigError && error.variable === variable && error.message.startsWith(`Invalid configuration: ${variable} `), `${variable}=${value} is refused, naming it`)
  }
})
