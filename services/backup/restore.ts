import { createHash } from 'node:crypto'
import { lstat, mkdir, mkdtemp, open, readdir, rename, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { createGunzip } from 'node:zlib'
import { backupErrors } from './errors.js'
import { backupParts, backupRoots, type BackupSources } from './backup.js'
import { archivePath, checkFiles, checkRoots, MANIFEST_PATH, parseManifest, ROOT_VARIABLES, type BackupManifest, type BackupParts, type ManifestFile, type RootName } from './manifest.js'
import { readTar, TarFormatError, type TarEntry } from './tar.js'

async function isEmpty (dir: string): Promise<boolean> {
  try {
    return (await readdir(dir)).length === 0
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return true
    throw error
  }
}

const invalid = (why: string): Error => backupErrors.archiveInvalid({ why })

/**
 * An entry's place, refused when its path is not one a backup writes, when
 * it was met before, or when it and an earlier entry disagree on what is a
 * folder (a file inside what was a file, a folder where a file was).
 * `kinds` learns every path met, folders that only contain others included.
 */
function placeEntry (entry: TarEntry, roots: ReadonlyMap<RootName, string>, kinds: Map<string, 'file' | 'directory'>, met: Set<string>): string[] {
  const segments = archivePath(entry.path, roots, 'it holds')
  if (segments.length === 1 && entry.type === 'file') throw invalid(`it holds ${JSON.stringify(entry.path)} as a file, where a backup has a folder`)
  for (let depth = 1; depth < segments.length; depth++) {
    const folder = segments.slice(0, depth).join('/')
    if (kinds.get(folder) === 'file') throw invalid(`it holds ${entry.path} inside ${folder}, which it holds as a file`)
    kinds.set(folder, 'directory')
  }
  const kind = kinds.get(entry.path)
  if (kind !== undefined && kind !== entry.type) throw invalid(`it holds ${entry.path} both as a file and as a folder`)
  if (met.has(entry.path)) throw invalid(`${entry.path} appears twice`)
  met.add(entry.path)
  kinds.set(entry.path, entry.type)
  return segments
}

/** Where pass two writes: the staging folder of a root, made on first use. */
type Stage = (root: RootName) => Promise<string>

interface Read { manifest: BackupManifest, kinds: Map<string, 'file' | 'directory'>, found: Map<string, ManifestFile> }

/**
 * One reading of the archive, every entry checked as it comes, each file's
 * size and SHA-256 taken; with `stage`, files and folders are also written
 * there. The manifest, last in the archive, is checked against this
 * server's roots and against what came before it.
 */
async function readArchive (file: string, server: { roots: ReadonlyMap<RootName, string>, parts: BackupParts, engine: BackupSources['engine'] }, stage?: Stage): Promise<Read> {
  const { roots } = server
  const kinds = new Map<string, 'file' | 'directory'>()
  const met = new Set<string>()
  const found = new Map<string, ManifestFile>()
  let manifest: BackupManifest | null = null
  const archive = await open(file, 'r').catch((error: NodeJS.ErrnoException) => {
    throw error.code === 'ENOENT' ? backupErrors.archiveNotFound({ file }) : error
  })
  if (!(await archive.stat()).isFile()) {
    await archive.close()
    throw invalid(`${file} is not a file`)
  }
  const raw = archive.createReadStream()
  const source = raw.pipe(createGunzip())
  // pipe() does not pass a read error on: the reader of `source` gets it, and an early stop closes the file too.
  raw.once('error', (error) => { source.destroy(error) })
  source.once('close', () => { raw.destroy() })
  try {
    for await (const entry of readTar(source)) {
      if (manifest !== null) throw invalid(`${entry.path} comes after the manifest`)
      if (entry.path === MANIFEST_PATH) {
        if (entry.type !== 'file') throw invalid(`${MANIFEST_PATH} is a folder`)
        if (entry.size > 64 * 1024 * 1024) throw invalid(`${MANIFEST_PATH} is too large`)
        const parts: Buffer[] = []
        for await (const part of entry.body) parts.push(part)
        manifest = parseManifest(Buffer.concat(parts).toString('utf8'))
        continue
      }
      const segments = placeEntry(entry, roots, kinds, met)
      const place = stage === undefined ? null : join(await stage(segments[0] as RootName), ...segments.slice(1))
      if (entry.type === 'directory') {
        if (place !== null) await mkdir(place, { recursive: true, mode: 0o700 })
        continue
      }
      const hash = createHash('sha256')
      if (place === null) {
        for await (const part of entry.body) hash.update(part)
      } else {
        await mkdir(join(place, '..'), { recursive: true, mode: 0o700 })
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
      }
      found.set(entry.path, { path: entry.path, size: entry.size, sha256: hash.digest('hex') })
    }
  } catch (error) {
    source.destroy()
    if (error instanceof TarFormatError) throw invalid(error.message)
    if ((error as NodeJS.ErrnoException).code?.startsWith('Z_') === true) throw invalid('it is not a gzip-compressed archive, or its compression is damaged')
    throw error
  }
  if (manifest === null) throw invalid(`it has no ${MANIFEST_PATH}: not a Plinth backup, or cut short`)
  checkRoots(manifest, roots, server.parts, server.engine)
  checkFiles(manifest, roots, kinds, found)
  return { manifest, kinds, found }
}

/**
 * Reads the archive `file` through the checks a restore makes before it
 * writes anything (every path, the manifest, these sources' roots, each
 * file's size and SHA-256), writing nothing: its manifest, or why not.
 */
export async function verifyBackup (sources: BackupSources, file: string): Promise<BackupManifest> {
  const roots = new Map(backupRoots(sources).map((root) => [root.name, root.dir]))
  return (await readArchive(file, { roots, parts: backupParts(sources), engine: sources.engine })).manifest
}

/**
 * Restores the backup `file` into the directories `targets` names, each of
 * which must be empty (or absent). The archive is read twice: first only to
 * check it (every path, the manifest, this server's roots, each file's
 * size and SHA-256), so that a damaged or foreign archive is refused before
 * anything is written; then to write each root under a staging folder
 * inside its target, checked again as it is written, and only then moved
 * into place. Whatever fails, the targets are left as they were: staging
 * folders removed, folders the restore made removed, a move undone.
 */
export async function restoreBackup (targets: BackupSources, file: string): Promise<BackupManifest> {
  const configured = backupRoots(targets)
  const roots = new Map(configured.map((root) => [root.name, root.dir]))
  // A directory inside DATA_DIR is empty when DATA_DIR is: the roots are all there is to check.
  for (const root of configured) {
    if (!await isEmpty(root.dir)) throw backupErrors.targetNotEmpty({ variable: root.variable, dir: root.dir })
  }
  const server = { roots, parts: backupParts(targets), engine: targets.engine }
  await readArchive(file, server)

  const staging = new Map<RootName, string>()
  const made: string[] = []
  const moved: Array<{ from: string, to: string }> = []
  const stage: Stage = async (name) => {
    let folder = staging.get(name)
    if (folder === undefined) {
      const dir = roots.get(name) as string
      const first = await mkdir(dir, { recursive: true, mode: 0o700 })
      if (first !== undefined) made.push(first)
      folder = await mkdtemp(join(dir, '.restore-'))
      staging.set(name, folder)
    }
    return folder
  }
  try {
    const { manifest } = await readArchive(file, server, stage)
    for (const [name, folder] of staging) {
      for (const child of await readdir(folder)) {
        const move = { from: join(folder, child), to: join(roots.get(name) as string, child) }
        // rename() would replace a file put there since the check above (or by another root sharing the directory).
        if (await lstat(move.to).then(() => true, (error: NodeJS.ErrnoException) => { if (error.code === 'ENOENT') return false; throw error })) {
          throw backupErrors.targetNotEmpty({ variable: ROOT_VARIABLES[name], dir: roots.get(name) as string })
        }
        await rename(move.from, move.to)
        moved.push(move)
      }
    }
    return manifest
  } catch (error) {
    for (const move of moved.reverse()) await rename(move.to, move.from).catch(() => {})
    for (const dir of made.reverse()) await rm(dir, { recursive: true, force: true })
    throw error
  } finally {
    for (const folder of staging.values()) await rm(folder, { recursive: true, force: true })
  }
}
