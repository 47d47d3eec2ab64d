import { createHash } from 'node:crypto'
import { mkdir, mkdtemp, open, readdir, rename, rm } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { createGunzip } from 'node:zlib'
import { backupErrors } from './errors.js'
import { MANIFEST_PATH, type BackupManifest, type BackupSources, type ManifestFile } from './backup.js'
import { readTar, TarFormatError } from './tar.js'

async function isEmpty (dir: string): Promise<boolean> {
  try {
    return (await readdir(dir)).length === 0
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return true
    throw error
  }
}

const ROOTS = new Set(['data', 'git', 'hosting'])
const SEGMENT = /^(?!\.{1,2}$)[^/\0]+$/

/** An entry's place in the archive, refused unless it is a plain relative path under one of the archive's roots. */
function checkPath (path: string): string[] {
  const segments = path.split('/')
  if (path === MANIFEST_PATH) return segments
  if (!segments.every((segment) => SEGMENT.test(segment)) || !ROOTS.has(segments[0])) {
    throw backupErrors.archiveInvalid({ why: `it holds ${JSON.stringify(path)}, which is not a path a backup writes` })
  }
  return segments
}

function parseManifest (text: string): BackupManifest {
  let manifest: unknown
  try {
    manifest = JSON.parse(text)
  } catch {
    throw backupErrors.archiveInvalid({ why: `${MANIFEST_PATH} is not JSON` })
  }
  const m = manifest as Partial<BackupManifest>
  if (m?.format !== 'plinth-backup' || m.version !== 1 || !Array.isArray(m.files) || !Array.isArray(m.roots)) {
    throw backupErrors.archiveInvalid({ why: `${MANIFEST_PATH} is not a Plinth backup manifest of version 1` })
  }
  return m as BackupManifest
}

/**
 * Restores the backup `file` into the directories `targets` names, each of
 * which must be empty (or absent). Every file is written under a staging
 * folder inside its target and checked against the manifest's size and
 * SHA-256; only when all match are they moved into place, so a damaged or
 * foreign archive leaves the targets as empty as they were.
 */
export async function restoreBackup (targets: Omit<BackupSources, 'engine'>, file: string): Promise<BackupManifest> {
  const dirs = { data: resolve(targets.dataDir), git: resolve(targets.reposDir), hosting: resolve(targets.hostingDir) }
  const variables = { data: 'DATA_DIR', git: 'GIT_REPOS_DIR', hosting: 'HOSTING_DIR' }
  for (const name of ['data', 'git', 'hosting'] as const) {
    if (!await isEmpty(dirs[name])) throw backupErrors.targetNotEmpty({ variable: variables[name], dir: dirs[name] })
  }
  // A root is staged when its first entry arrives: `git` and `hosting` are roots only when they lived outside DATA_DIR.
  const staging = new Map<'data' | 'git' | 'hosting', string>()
  const stageOf = async (name: 'data' | 'git' | 'hosting'): Promise<string> => {
    let stage = staging.get(name)
    if (stage === undefined) {
      await mkdir(dirs[name], { recursive: true, mode: 0o700 })
      stage = await mkdtemp(join(dirs[name], '.restore-'))
      staging.set(name, stage)
    }
    return stage
  }
  try {
    const found = new Map<string, ManifestFile>()
    let manifest: BackupManifest | null = null
    const archive = await open(file, 'r')
    if (!(await archive.stat()).isFile()) {
      await archive.close()
      throw backupErrors.archiveInvalid({ why: `${file} is not a file` })
    }
    const raw = archive.createReadStream()
    const source = raw.pipe(createGunzip())
    // pipe() does not pass a read error on: the reader of `source` gets it, and an early stop closes the file too.
    raw.once('error', (error) => { source.destroy(error) })
    source.once('close', () => { raw.destroy() })
    try {
      for await (const entry of readTar(source)) {
        const segments = checkPath(entry.path)
        if (manifest !== null) throw backupErrors.archiveInvalid({ why: `${entry.path} comes after the manifest` })
        if (entry.path === MANIFEST_PATH) {
          if (entry.size > 64 * 1024 * 1024) throw backupErrors.archiveInvalid({ why: `${MANIFEST_PATH} is too large` })
          const parts: Buffer[] = []
          for await (const part of entry.body) parts.push(part)
          manifest = parseManifest(Buffer.concat(parts).toString('utf8'))
          continue
        }
        const stage = await stageOf(segments[0] as 'data' | 'git' | 'hosting')
        const place = join(stage, ...segments.slice(1))
        if (entry.type === 'directory') {
          await mkdir(place, { recursive: true, mode: 0o700 })
          continue
        }
        if (found.has(entry.path)) throw backupErrors.archiveInvalid({ why: `${entry.path} appears twice` })
        await mkdir(join(place, '..'), { recursive: true, mode: 0o700 })
        const hash = createHash('sha256')
        const out = await open(place, 'wx', (entry.mode & 0o700) | 0o600)
        try {
          for await (const part of entry.body) {
            hash.update(part)
            await out.write(part)
          }
          await out.sync()
        } finally {
          await out.close()
        }
        found.set(entry.path, { path: entry.path, size: entry.size, sha256: hash.digest('hex') })
      }
    } catch (error) {
      source.destroy()
      if (error instanceof TarFormatError) throw backupErrors.archiveInvalid({ why: error.message })
      if ((error as NodeJS.ErrnoException).code?.startsWith('Z_') === true) throw backupErrors.archiveInvalid({ why: 'it is not a gzip-compressed archive, or its compression is damaged' })
      throw error
    }
    if (manifest === null) throw backupErrors.archiveInvalid({ why: `it has no ${MANIFEST_PATH}: not a Plinth backup, or cut short` })
    for (const listed of manifest.files) {
      const got = found.get(listed.path)
      if (got === undefined) throw backupErrors.archiveInvalid({ why: `${listed.path} is in the manifest but not in the archive` })
      if (got.size !== listed.size || got.sha256 !== listed.sha256) throw backupErrors.archiveInvalid({ why: `${listed.path} does not match its checksum in the manifest` })
      found.delete(listed.path)
    }
    const [extra] = found.keys()
    if (extra !== undefined) throw backupErrors.archiveInvalid({ why: `${extra} is not in the manifest` })
    for (const name of ['data', 'git', 'hosting'] as const) {
      const stage = staging.get(name)
      if (stage === undefined) continue
      for (const child of await readdir(stage)) await rename(join(stage, child), join(dirs[name], child))
    }
    return manifest
  } finally {
    for (const stage of staging.values()) await rm(stage, { recursive: true, force: true })
  }
}
