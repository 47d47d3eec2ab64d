import { execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { request } from 'node:http'
import { setTimeout as delay } from 'node:timers/promises'
import type { Test } from 'tap'
import { call, tempDir, type TestApp } from '../../helper.js'
import type { DeploymentT } from '../../../schemas/hosting.js'

export const FIXTURES = join(import.meta.dirname, '../../fixtures/hosting')

/** A fixture app packed as a .tar.gz by the system tar, as a user would. */
export function packFixture (t: Test, name: string): Buffer {
  const file = join(tempDir(t, 'plinth-pack-'), `${name}.tar.gz`)
  execFileSync('tar', ['-czf', file, '-C', join(FIXTURES, name), '.'])
  return readFileSync(file)
}

/** Uploads an archive through the source-upload routes, in chunks, and returns the upload id. */
export async function uploadSource (app: TestApp, appUrl: string, auth: Record<string, string>, archive: Buffer, name = 'source.tar.gz'): Promise<string> {
  const sha256 = createHash('sha256').update(archive).digest('hex')
  const started = await call(app, 'POST', `${appUrl}/source-uploads`, auth, { name, size: archive.length, sha256 })
  if (started.status !== 201) throw new Error(`start upload: ${JSON.stringify(started.body)}`)
  const { id, chunkSize, chunkCount } = started.body.data as { id: string, chunkSize: number, chunkCount: number }
  for (let index = 0; index < chunkCount; index++) {
    const res = await app.inject({ method: 'PUT', url: `${appUrl}/source-uploads/${id}/chunks/${index}`, headers: { ...auth, 'content-type': 'application/octet-stream' }, payload: archive.subarray(index * chunkSize, (index + 1) * chunkSize) })
    if (res.statusCode !== 200) throw new Error(`chunk: ${res.body}`)
  }
  const completed = await call(app, 'POST', `${appUrl}/source-uploads/${id}/complete`, auth)
  if (completed.status !== 200) throw new Error(`complete: ${JSON.stringify(completed.body)}`)
  return id
}

/** Polls until `check` holds; the bound only keeps a broken run from hanging. */
export async function waitFor<T> (what: string, read: () => Promise<T>, check: (value: T) => boolean, timeoutMs = 120_000): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await read()
    if (check(value)) return value
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(value)}`)
    await delay(100)
  }
}

export async function deploymentSettled (app: TestApp, appUrl: string, auth: Record<string, string>, deploymentId: string): Promise<DeploymentT> {
  return await waitFor(`deployment ${deploymentId}`, async () => (await call(app, 'GET', `${appUrl}/deployments/${deploymentId}`, auth)).body.data as DeploymentT, (deployment) => !['queued', 'building', 'releasing'].includes(deployment.state))
}

/** One request to the gateway with a Host header. */
export async function viaGateway (port: number, host: string, path = '/'): Promise<{ status: number, body: string, headers: Record<string, string | string[] | undefined> }> {
  return await new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, headers: { host }, agent: false }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (chunk: Buffer) => chunks.push(chunk))
      res.on('end', () => { resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString(), headers: res.headers }) })
      res.on('error', reject)
    })
    req.on('error', reject)
    req.end()
  })
}
