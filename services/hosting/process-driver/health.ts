import { request } from 'node:http'

/** One GET of the health path, given at most `timeoutMs`: the status, or the error code when nothing answered. */
export async function checkHealth (host: string, port: number, path: string, timeoutMs: number): Promise<{ status: number } | { error: string }> {
  return await new Promise(resolve => {
    const req = request({ host, port, path, method: 'GET', timeout: timeoutMs, headers: { 'user-agent': 'plinth-health-check' } }, response => {
      response.resume()
      resolve({ status: response.statusCode ?? 0 })
    })
    req.on('timeout', () => req.destroy(Object.assign(new Error('timeout'), { code: 'ETIMEDOUT' })))
    req.on('error', (error: NodeJS.ErrnoException) => resolve({ error: error.code ?? error.message }))
    req.end()
  })
}
