import { request } from 'node:http'

const PROBE_TIMEOUT_MS = 2000

/** One health probe from the host: the answer's status, or null when nothing answered in time. */
export async function probeHealth (host: string, port: number, path: string, signal: AbortSignal): Promise<number | null> {
  return await new Promise((resolve) => {
    let probe
    try {
      probe = request({ host, port, path: path.startsWith('/') ? path : `/${path}`, method: 'GET', agent: false, timeout: PROBE_TIMEOUT_MS, signal })
    } catch {
      // A path Node refuses to send (control characters, spaces) never answers.
      resolve(null)
      return
    }
    probe.on('response', (response) => {
      response.resume()
      resolve(response.statusCode ?? null)
    })
    probe.on('timeout', () => probe.destroy())
    probe.on('error', () => resolve(null))
    probe.end()
  })
}
