import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Test } from 'tap'

/**
 * A model provider on loopback speaking the real wire formats of the model
 * list: OpenAI's (`GET /v1/models` with `Authorization: Bearer`, answering
 * `{ object: 'list', data: [{ id, object: 'model', created, owned_by }] }`,
 * with the extra fields vLLM and OpenRouter add) and Anthropic's (`GET
 * /anthropic/v1/models` with `x-api-key` and `anthropic-version`, answering
 * `{ data: [{ type: 'model', id, display_name, created_at }], has_more,
 * first_id, last_id }`, errors as `{ type: 'error', error: { type, message } }`).
 */
export interface ProviderServer {
  /** `http://127.0.0.1:<port>`. */
  origin: string
  openaiKey: string
  anthropicKey: string
  /** Every request's method, path and headers, in order. */
  requests: Array<{ method: string, url: string, headers: IncomingMessage['headers'] }>
}

function send (response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { 'content-type': 'application/json' })
  response.end(JSON.stringify(body))
}

export async function startProviderServer (t: Test): Promise<ProviderServer> {
  const openaiKey = 'sk-test-openai-0123456789abcdef'
  const anthropicKey = 'sk-ant-test-0123456789wxyz'
  const requests: ProviderServer['requests'] = []
  const server = createServer((request, response) => {
    requests.push({ method: request.method ?? '', url: request.url ?? '', headers: request.headers })
    const url = new URL(request.url ?? '/', 'http://localhost')
    if (url.pathname === '/v1/models' && request.method === 'GET') {
      if (request.headers.authorization !== `Bearer ${openaiKey}`) {
        send(response, 401, { error: { message: 'Incorrect API key provided', type: 'invalid_request_error', param: null, code: 'invalid_api_key' } })
        return
      }
      send(response, 200, {
        object: 'list',
        data: [
          { id: 'llama3.1:8b', object: 'model', created: 1721000000, owned_by: 'library', max_model_len: 131072 },
          { id: 'qwen/qwen-2.5-coder', object: 'model', created: 1721000001, owned_by: 'qwen', context_length: 32768, pricing: { prompt: '0.0000002', completion: '0.0000006' } },
          { id: 'tiny', object: 'model', created: 1721000002, owned_by: 'library' }
        ]
      })
      return
    }
    if (url.pathname === '/anthropic/v1/models' && request.method === 'GET') {
      if (request.headers['anthropic-version'] === undefined) {
        send(response, 400, { type: 'error', error: { type: 'invalid_request_error', message: 'anthropic-version: header is required' } })
        return
      }
      if (request.headers['x-api-key'] !== anthropicKey) {
        send(response, 401, { type: 'error', error: { type: 'authentication_error', message: 'invalid x-api-key' } })
        return
      }
      const data = [
        { type: 'model', id: 'claude-sonnet-4-5', display_name: 'Claude Sonnet 4.5', created_at: '2025-09-29T00:00:00Z' },
        { type: 'model', id: 'claude-haiku-4-5', display_name: 'Claude Haiku 4.5', created_at: '2025-10-01T00:00:00Z' }
      ]
      send(response, 200, { data, has_more: false, first_id: data[0].id, last_id: data[1].id })
      return
    }
    if (url.pathname === '/teapot/v1/models') {
      send(response, 418, { error: { message: `I will not serve ${request.headers.authorization ?? 'nobody'}` } })
      return
    }
    if (url.pathname === '/broken/v1/models') {
      send(response, 500, { error: { message: 'the model server is loading' } })
      return
    }
    if (url.pathname === '/moved/v1/models') {
      response.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data' })
      response.end()
      return
    }
    send(response, 404, { error: { message: `no route ${url.pathname}` } })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(async () => { await new Promise((resolve) => server.close(resolve)) })
  const { port } = server.address() as AddressInfo
  return { origin: `http://127.0.0.1:${port}`, openaiKey, anthropicKey, requests }
}
