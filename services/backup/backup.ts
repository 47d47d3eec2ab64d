import { createHash, randomBytes } from 'node:crypto'
import { closeSync, createWriteStream, openSync } from 'node:fs'
import { lstat, open, readdir, rename, rm } from 'node:fs/promises'
import { basename, dirname, join, relative, resolve, sep } from 'node:path'
import { pipeline } from 'node:stream/promises'
import { createGzip } from 'node:zlib'
import Database from 'better-sqlite3'
import { MASTER_KEY_FILE } from '../platform/crypto.js'
import { MANIFEST_PATH, STORE_FILE, type BackupManifest, type BackupParts, type ManifestFile, ROOT_NAMES, ROOT_VARIABLES, type RootName } from './manifest.js'
import { TarWriter } from './tar.js'

/** Where a deployment keeps what a backup holds: DATA_DIR, and the git and hosting directories (under it unless set elsewhere). */
export interface BackupSources {
  dataDir: string
  reposDir: string
  hostingDir: string
  /** On MongoDB the store is not in DATA_DIR: mongodump or the provider's snapshots back it up. */
  engine: 'sqlite' | 'mongodb'
  /** Folders left out (BACKUP_DIR: backups are not backed up again). */
  exclude?: readonly string[]
}

export const KEY_FILES = [MASTER_KEY_FILE, 'ssh_host_ed25519_key']
const STORE_FILES = new Set([STORE_FILE, `${STORE_FILE}-wal`, `${STORE_FILE}-shm`, `${STORE_FILE}-journal`])

const inside = (parent: string, child: string): boolean => child === parent || child.startsWith(parent + sep)

/** The archive's roots for these sources: a directory under DATA_DIR travels inside `data`. */
export function backupRoots (sources: Omit<BackupSources, 'engine' | 'exclude'>): Array<{ name: RootName, variable: string, dir: string }> {
  const dirs: Record<RootName, string> = { data: resolve(sources.dataDir), git: resolve(sources.reposDir), hosting: resolve(sources.hostingDir) }
  return ROOT_NAMES.filter((name) => name === 'data' || !inside(dirs.data, dirs[name])).map((name) => ({ name, variable: ROOT_VARIABLES[name], dir: dirs[name] }))
}

/** Where the repositories and hosting artifacts travel in the archive: their own root, or their folder under `data`. */
export function backupParts (sources: Omit<BackupSources, 'engine' | 'exclude'>): BackupParts {
  const data = resolve(sources.dataDir)
  const place = (name: 'git' | 'hosting', dir: string): string =>
    inside(data, resolve(dir)) ? ['data', ...relative(data, resolve(dir)).split(sep).filter((part) => part !== '')].join('/') : name
  return { git: place('git', sources.reposDir), hosting: place('hosting', sources.hostingDir) }
}

/**
 * A consistent copy of the embedded store while servers keep writing to it:
 * `VACUUM INTO` reads the database in one read transaction (WAL readers do
 * not block writers nor wait for them), so the copy holds every transaction
 * committed before it began and none after, whatever other processes do.
 */
export function snapshotStore (dataDir: string, target: string): void {
  const db = new Database(join(dataDir, STORE_FILE), { readonly: true, fileMustExist: true, timeout: 10_000 })
  try {
    // The copy holds every hash and sealed secret: made empty and owner-only first (VACUUM INTO takes an empty file),
    // rather than with the umask's permissions.
    closeSync(openSync(target, 'wx', 0o600))
    db.prepare('VACUUM INTO ?').run(target)
  } finally {
    db.close()
  }
}

/** What a backup leaves out of a directory: files being written (renamed into place when whole) and git's lock files. */
const inProgress = (name: string): boolean => /^\..*\.tmp$/.test(name) || name.endsWith('.lock')

interface Walked { path: string, absolute: string }

/**
 * Every directory and regular file under `dir`, depth first. Within a folder
 * git's `objects` comes last: a ref copied before the objects it points to
 * always finds them, since git writes objects before it moves a ref.
 */
async function * walk (dir: string, prefix: string, skip: (absolute: string, name: string) => boolean): AsyncGenerator<Walked & { kind: 'file' | 'directory' }> {
  let names: string[]
  try {
    names = await readdir(dir)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return
    throw error
  }
  names.sort((a, b) => (a === 'objects' ? 1 : 0) - (b === 'objects' ? 1 : 0) || (a < b ? -1 : a > b ? 1 : 0))
  for (const name of names) {
    const absolute = join(dir, name)
    if (skip(absolute, name) || inProgress(name)) continue
    const stats = await lstat(absolute).catch((error: NodeJS.ErrnoException) => { if (error.code === 'ENOENT') return null; throw error })
    if (stats === null) continue
    const path = `${prefix}/${name}`
    if (stats.isDirectory()) {
      yield { path, absolute, kind: 'directory' }
      yield * walk(absolute, path, skip)
    } else if (stats.isFile()) {
      yield { path, absolute, kind: 'file' }
    }
  }
}

async function addFile (tar: TarWriter, path: string, absolute: string, files: ManifestFile[]): Promise<void> {
  const handle = await open(absolute, 'r').catch((error: NodeJS.ErrnoException) => { if (error.code === 'ENOENT') return null; throw error })
  if (handle === null) return
  try {
    const stats = await handle.stat()
    const hash = createHash('sha256')
    // Only the bytes the file had when opened: a log that grows meanwhile is copied as it was.
    const source = stats.size === 0 ? [] : handle.createReadStream({ start: 0, end: stats.size - 1, autoClose: false })
    const hashed = async function * (): AsyncGenerator<Buffer> {
      for await (const chunk of source as AsyncIterable<Buffer>) {
        hash.update(chunk)
        yield chunk
      }
    }
    await tar.file(path, stats.size, stats.mode & 0o777, stats.mtimeMs, hashed())
    files.push({ path, size: stats.size, sha256: hash.digest('hex') })
  } finally {
    await handle.close()
  }
}

/**
 * Writes a backup of `sources` to `file` (gzip-compressed tar, mode 0600):
 * a snapshot of the store taken first, then every file of DATA_DIR and of the
 * git and hosting directories as they are while the copy runs, then the
 * manifest with each file's size and SHA-256. The archive appears under its
 * name only once whole. Keys stay out unless `includeKeys`.
 */
export async function writeBackup (sources: BackupSources, file: string, options: { includeKeys?: boolean, now?: Date, signal?: AbortSignal } = {}): Promise<BackupManifest> {
  const target = resolve(file)
  const partial = join(dirname(target), `.${basename(target)}.${randomBytes(6).toString('hex')}.partial`)
  const snapshot = `${partial}.db`
  const roots = backupRoots(sources)
  const excluded = new Set((sources.exclude ?? []).map((dir) => resolve(dir)))
  const manifest: BackupManifest = {
    format: 'plinth-backup',
    version: 1,
    createdAt: (options.now ?? new Date()).toISOString(),
    engine: sources.engine,
    includesKeys: options.includeKeys === true,
    roots: roots.map(({ name, variable }) => ({ name, variable })),
    parts: backupParts(sources),
    files: []
  }
  const gzip = createGzip()
  const written = pipeline(gzip, createWriteStream(partial, { mode: 0o600, flags: 'wx' }))
  try {
    options.signal?.throwIfAborted()
    if (sources.engine === 'sqlite') snapshotStore(sources.dataDir, snapshot)
    const tar = new TarWriter(gzip)
    const skip = (absolute: string, name: string): boolean => {
      if (absolute === target || absolute === partial || absolute === snapshot || excluded.has(absolute)) return true
      if (dirname(absolute) !== roots[0].dir) return false
      return STORE_FILES.has(name) || (options.includeKeys !== true && KEY_FILES.includes(name))
    }
    for (const root of roots) {
      await tar.directory(root.name, 0o700, Date.now())
      if (root.name === 'data' && sources.engine === 'sqlite') await addFile(tar, `data/${STORE_FILE}`, snapshot, manifest.files)
      for await (const entry of walk(root.dir, root.name, skip)) {
        options.signal?.throwIfAborted()
        if (entry.kind === 'directory') await tar.directory(entry.path, 0o700, Date.now())
        else await addFile(tar, entry.path, entry.absolute, manifest.files)
      }
    }
    options.signal?.throwIfAborted()
    const body = Buffer.from(JSON.stringify(manifest, null, 2))
    await tar.file(MANIFEST_PATH, body.length, 0o600, Date.now(), [body])
    await tar.end()
    gzip.end()
    await written
    const handle = await open(partial, 'r+')
    try { await handle.sync() } finally { await handle.close() }
    await rename(partial, target)
    return manifest
  } catch (error) {
    gzip.destroy(error as Error)
    await written.catch(() => {})
    await rm(partial, { force: true })
    throw error
  } finally {
    await rm(snapshot, { force: true })
  }
}
