/**
 * @plinth/sdk/node: the parts that need Node — a session storage in a file,
 * and deploying a hosting app from a folder (packed with the system `tar`).
 */
import { spawn } from 'node:child_process'
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises'
import { dirname } from 'node:path'
import type { PlinthAdmin } from '../admin/index.js'
import type { DataOf } from '../core/paths.js'
import { resumableUpload, type UploadProgress } from '../client/files.js'
import type { SessionStorage } from '../client/storage.js'

/** Keeps the session in a JSON file (mode 0600), written whole and renamed into place. */
export function fileStorage (file: string): SessionStorage {
  const read = async (): Promise<Record<string, string>> => {
    try {
      return JSON.parse(await readFile(file, 'utf8')) as Record<string, string>
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {}
      throw error
    }
  }
  const write = async (values: Record<string, string>): Promise<void> => {
    await mkdir(dirname(file), { recursive: true })
    const temporary = `${file}.${process.pid}.tmp`
    await writeFile(temporary, JSON.stringify(values), { mode: 0o600 })
    await rename(temporary, file)
  }
  return {
    get: async (key) => (await read())[key] ?? null,
    set: async (key, value) => { await write({ ...await read(), [key]: value }) },
    remove: async (key) => {
      const values = await read()
      delete values[key]
      if (Object.keys(values).length === 0) await rm(file, { force: true })
      else await write(values)
    }
  }
}

/** The folder as a gzip'd tar, in memory (hosting takes 200 MiB at most). */
export async function packFolder (folder: string): Promise<Blob> {
  const tar = spawn('tar', ['-czf', '-', '-C', folder, '.'], { stdio: ['ignore', 'pipe', 'pipe'] })
  const parts: Buffer[] = []
  let errors = ''
  tar.stdout.on('data', (part: Buffer) => parts.push(part))
  tar.stderr.on('data', (part: Buffer) => { errors += part.toString() })
  const code = await new Promise<number | null>((resolve, reject) => { tar.on('error', reject); tar.on('close', resolve) })
  if (code !== 0) throw new Error(`tar could not pack ${folder}: ${errors.trim()}`)
  return new Blob([new Uint8Array(Buffer.concat(parts))], { type: 'application/gzip' })
}

export type DeployProgress = { phase: 'pack' } | ({ phase: 'upload' } & UploadProgress) | { phase: 'queued', deploymentId: string }

type Deployment = DataOf<'/api/projects/{projectId}/backend/apps/{appId}/deployments', 'post'>

/**
 * Deploys a folder to a container app: packs it, uploads it through a source
 * upload session (chunks, resumed after a dropped connection), and queues the
 * deployment. Follow it with `admin.hosting.followLogs(projectId, appId, 'build')`.
 */
export async function deployFolder (admin: PlinthAdmin, options: { projectId: string, appId: string, folder: string, onProgress?: (progress: DeployProgress) => void }): Promise<Deployment> {
  const { projectId, appId } = options
  options.onProgress?.({ phase: 'pack' })
  const archive = await packFolder(options.folder)
  const base = `/api/projects/${encodeURIComponent(projectId)}/backend/apps/${encodeURIComponent(appId)}/source-uploads`
  const uploaded = await resumableUpload<{ id: string }>(admin.http, base, archive, {
    name: 'source.tar.gz',
    onProgress: (progress) => options.onProgress?.({ phase: 'upload', ...progress })
  }, ({ name, size, sha256 }) => ({ name, size, sha256 }))
  const deployment = await admin.hosting.deploy(projectId, appId, { uploadId: uploaded.id })
  options.onProgress?.({ phase: 'queued', deploymentId: deployment.id })
  return deployment
}

export { fileStorage as nodeFileStorage }
