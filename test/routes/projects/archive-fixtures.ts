import { createHash, randomBytes } from 'node:crypto'
import { gunzipSync, gzipSync } from 'node:zlib'
import { PassThrough } from 'node:stream'
import type { TestApp } from '../../helper.js'
import { readTar, TarWriter } from '../../../services/backup/tar.js'

/** Helpers of the project archive tests: posting an archive, reading one, forging one. */

export const sha256 = (data: Buffer): string => createHash('sha256').update(data).digest('hex')

/** A multipart body of one file field holding `data`. */
export function form (data: Buffer, field = 'file'): { boundary: string, payload: Buffer } {
  const boundary = `----plinth${randomBytes(8).toString('hex')}`
  const payload = Buffer.concat([
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${field}"; filename="p.tar.gz"\r\nContent-Type: application/gzip\r\n\r\n`),
    data,
    Buffer.from(`\r\n--${boundary}--\r\n`)
  ])
  return { boundary, payload }
}

export async function importArchive (app: TestApp, orgId: string, auth: Record<string, string>, archive: Buffer) {
  const { boundary, payload } = form(archive)
  const res = await app.inject({ method: 'POST', url: `/api/organizations/${orgId}/projects/import`, headers: { ...auth, 'content-type': `multipart/form-data; boundary=${boundary}` }, payload })
  return { status: res.statusCode, body: res.json(), headers: res.headers }
}

export async function entriesOf (archive: Buffer): Promise<Map<string, Buffer>> {
  const entries = new Map<string, Buffer>()
  for await (const entry of readTar((async function * () { yield gunzipSync(archive) })())) {
    const parts: Buffer[] = []
    for await (const part of entry.body) parts.push(part)
    entries.set(entry.path, Buffer.concat(parts))
  }
  return entries
}

/** The entries again, under a manifest listing each with its true checksum. */
export async function forge (entries: Map<string, Buffer>, manifest: Record<string, unknown>): Promise<Buffer> {
  const out = new PassThrough()
  const chunks: Buffer[] = []
  out.on('data', (chunk: Buffer) => chunks.push(chunk))
  const tar = new TarWriter(out)
  const listed = []
  for (const [path, body] of entries) {
    if (path === 'manifest.json') continue
    await tar.file(path, body.length, 0o600, Date.now(), [body])
    listed.push({ path, size: body.length, sha256: sha256(body) })
  }
  const text = Buffer.from(JSON.stringify({ ...manifest, entries: listed }))
  await tar.file('manifest.json', text.length, 0o600, Date.now(), [text])
  await tar.end()
  out.end()
  return gzipSync(Buffer.concat(chunks))
}
