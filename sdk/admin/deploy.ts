import { PlinthError } from '../core/errors.js'
import { unwrap, type Http } from '../core/http.js'
import type { DataOf } from '../core/paths.js'
import { resumableUpload, type UploadProgress } from '../client/files.js'

export type Deployment = DataOf<'/api/projects/{projectId}/backend/apps/{appId}/deployments', 'post'>

/** How an archive's deployment goes: each acknowledged chunk of the upload, then the deployment queued. */
export type ArchiveDeployProgress = ({ phase: 'upload' } & UploadProgress) | { phase: 'queued', deploymentId: string }

export interface ArchiveDeployOptions {
  /** The archive's name, which says its kind: `.tar.gz`, `.tgz` or `.tar`. A File's own name by default. */
  name?: string
  onProgress?: (progress: ArchiveDeployProgress) => void
  signal?: AbortSignal
}

/**
 * Deploys a source archive to a container app: uploads it through a source
 * upload session (chunks, resumed after a dropped connection) and queues the
 * deployment. Browser-safe: the console deploys a picked archive or folder
 * (packed by `packFiles`) this way, and `deployFolder` in @plinth/sdk/node too.
 */
export async function deployArchive (http: Http, where: { projectId: string, appId: string }, archive: Blob, options: ArchiveDeployOptions = {}): Promise<Deployment> {
  const app = `/api/projects/${encodeURIComponent(where.projectId)}/backend/apps/${encodeURIComponent(where.appId)}`
  const uploaded = await resumableUpload<{ id: string }>(http, `${app}/source-uploads`, archive, {
    name: options.name,
    signal: options.signal,
    onProgress: (progress) => options.onProgress?.({ phase: 'upload', ...progress })
  }, ({ name, size, sha256 }) => ({ name, size, sha256 }))
  const deployment = await unwrap(http.api.POST('/api/projects/{projectId}/backend/apps/{appId}/deployments', {
    params: { path: where }, body: { uploadId: uploaded.id }, signal: options.signal
  }))
  options.onProgress?.({ phase: 'queued', deploymentId: deployment.id })
  return deployment
}

/** A file to pack: its path inside the archive (`/`-separated, relative) and its bytes. */
export interface PackedFile { path: string, data: Blob }

const BLOCK = 512
const encoder = new TextEncoder()

function octal (value: number, width: number): string {
  return value.toString(8).padStart(width - 1, '0') + '\0'
}

/** Splits a path into ustar's `prefix` (155 bytes) and `name` (100 bytes) at a `/`, or says it cannot. */
function ustarNames (path: string): { name: Uint8Array, prefix: Uint8Array } {
  const whole = encoder.encode(path)
  if (whole.length <= 100) return { name: whole, prefix: new Uint8Array(0) }
  for (let cut = path.indexOf('/'); cut !== -1; cut = path.indexOf('/', cut + 1)) {
    const prefix = encoder.encode(path.slice(0, cut))
    const name = encoder.encode(path.slice(cut + 1))
    if (prefix.length <= 155 && name.length <= 100) return { name, prefix }
  }
  throw new PlinthError(0, 'SDK_PATH_TOO_LONG', `${path} is too long for a tar archive`)
}

function header (path: string, size: number, mtime: number): Uint8Array {
  const block = new Uint8Array(BLOCK)
  const put = (offset: number, text: string | Uint8Array) => { block.set(typeof text === 'string' ? encoder.encode(text) : text, offset) }
  const { name, prefix } = ustarNames(path)
  put(0, name)
  put(100, octal(0o644, 8))
  put(108, octal(0, 8))
  put(116, octal(0, 8))
  put(124, octal(size, 12))
  put(136, octal(mtime, 12))
  put(148, '        ')
  put(156, '0')
  put(257, 'ustar\u000000')
  put(345, prefix)
  const sum = block.reduce((total, byte) => total + byte, 0)
  put(148, `${sum.toString(8).padStart(6, '0')}\0 `)
  return block
}

/**
 * Packs files into a plain (ustar) tar archive, as a Blob that reads the
 * files' bytes only when it is read: what a browser has for a picked folder
 * (`webkitRelativePath`) becomes a source archive without a Node module.
 */
export function packFiles (files: PackedFile[], mtime = Math.floor(Date.now() / 1000)): Blob {
  const parts: Array<ArrayBuffer | Blob> = []
  for (const file of files) {
    const path = file.path.replace(/^\.?\/+/, '')
    if (path === '' || path.split('/').includes('..')) throw new PlinthError(0, 'SDK_PATH_INVALID', `${file.path} is not a relative path inside the archive`)
    parts.push(header(path, file.data.size, mtime).buffer as ArrayBuffer, file.data)
    const padding = (BLOCK - (file.data.size % BLOCK)) % BLOCK
    if (padding > 0) parts.push(new Uint8Array(padding).buffer)
  }
  parts.push(new Uint8Array(2 * BLOCK).buffer)
  return new Blob(parts, { type: 'application/x-tar' })
}
