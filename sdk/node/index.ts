/**
 * @plinth/sdk/node: the parts that need Node — a session storage in a file,
 * and deploying a hosting app from a folder (packed with the system `tar`).
 */
import { spawn } from 'node:child_process'
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises'
import { dirname } from 'node:path'
import type { ArchiveDeployProgress, Deployment, PlinthAdmin } from '../admin/index.js'
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

export type DeployProgress = { phase: 'pack' } | ArchiveDeployProgress

/**
 * Deploys a folder to a container app: packs it with the system `tar`, then
 * `admin.hosting.deployArchive` uploads it (chunks, resumed after a dropped
 * connection) and queues the deployment. Follow it with
 * `admin.hosting.followLogs(projectId, appId, 'build', { deploymentId })`.
 */
export async function deployFolder (admin: PlinthAdmin, options: { projectId: string, appId: string, folder: string, onProgress?: (progress: DeployProgress) => void }): Promise<Deployment> {
  options.onProgress?.({ phase: 'pack' })
  const archive = await packFolder(options.folder)
  return await admin.hosting.deployArchive(options.projectId, options.appId, archive, { name: 'source.tar.gz', onProgress: options.onProgress })
}

export { fileStorage as nodeFileStorage }
