import { benchOwner, startBenchApp } from './bench-app.js'

/**
 * The real app with an organization whose LLM credential is the scripted
 * provider the bench runs on loopback (BENCH_PROVIDER_URL, an OpenAI
 * chat-completions wire), set up through the REST routes as an operator would.
 */
const providerUrl = process.env.BENCH_PROVIDER_URL
if (providerUrl === undefined) throw new Error('BENCH_PROVIDER_URL is required')
const { app } = await startBenchApp({ AUTH_RATE_LIMIT_MAX: '1000000', LLM_ALLOWED_HOSTS: '127.0.0.1' })
const address = await app.listen({ port: 0, host: '127.0.0.1' })
const { userId, orgId, accessToken } = await benchOwner(app)
const project = await app.projects.create(orgId, userId, { name: 'Assistant bench' })
const headers = { authorization: `Bearer ${accessToken}` }
const setup = async (url: string, method: 'POST' | 'PATCH', payload: unknown): Promise<void> => {
  const res = await app.inject({ method, url, headers, payload: payload as Record<string, unknown> })
  if (res.statusCode >= 300) throw new Error(`${method} ${url}: ${res.statusCode} ${res.body}`)
}
await setup(`/api/organizations/${orgId}/llm-credentials`, 'POST', { name: 'scripted', provider: 'openai-compatible', baseUrl: `${providerUrl}/v1`, apiKey: 'sk-bench' })
await setup(`/api/organizations/${orgId}/llm-settings`, 'PATCH', { defaultModel: 'scripted:model-1' })
process.send?.({ address, accessToken, projectId: project.id })
