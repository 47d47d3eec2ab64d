import { request } from 'node:http'

/** What an HTTP request line carries unescaped: no spaces or control characters. */
const HEALTH_PATH = /^\/[\x21-\x7e]{0,1023}$/

/** Whether `path` can be an instance's health check path; every driver refuses a start with one that cannot. */
export function isHealthPath (path: string): boolean {
  return HEALTH_PATH.test(path)
}

/** One GET of the health path from the host, given at most `timeoutMs`: the status, or the error code when nothing answered. */
export async function probeHealth (host: string, port: number, path: string, timeoutMs: number, signal?: AbortSignal): Promise<{ status: number } | { error: string }> {
  return await new Promise(resolve => {
    const req = request({ host, port, path, method: 'GET', agent: false, timeout: timeoutMs, signal, headers: { 'user-agent': 'plinth-health-check' } }, response => {
      response.resume()
      resolve({ status: response.statusCode ?? 0 })
    })
    req.on('timeout', () => req.destroy(Object.assign(new Error('timeout'), { code: 'ETIMEDOUT' })))
    req.on('error', (error: NodeJS.ErrnoException) => resolve({ error: error.code ?? error.message }))
    req.end()
  })
}
