import { createHash, type Hash } from 'node:crypto'
import { createReadStream, createWriteStream } from 'node:fs'
import { chown, lstat, mkdir, readdir, realpath, symlink } from 'node:fs/promises'
import { dirname, join, relative, sep } from 'node:path'
import { pipeline } from 'node:stream/promises'
import { BuildFailedError } from './runtime.js'

/**
 * Reading a source tree the same way in every driver: which entries count,
 * in which order, how links are checked and how the tree is digested
 * (`Artifact.sourceDigest`), so one tree has one digest whichever driver
 * built it.
 */

/** Never part of an artifact, at any depth: version-control metadata. */
const SKIPPED = new Set(['.git'])

export interface SourceEntry {
  /** Relative to the root, `/`-separated. */
  path: string
  kind: 'dir' | 'file' | 'link'
  absolute: string
  /** Bytes of a file as listed; a file is read for exactly this many. */
  size: number
  /** Files: any execute bit set. Artifacts keep 0755 or 0644, nothing finer. */
  executable: boolean
  /** Links: the target, rewritten relative to the link's folder. */
  target: string | null
}

/**
 * Every directory, file and link under `root`, depth first with each
 * directory's names sorted. A link must lead (through any links on the way)
 * to something inside the tree, or the build is refused: an upload cannot
 * point a build, an instance or the gateway at the host's files. Sockets,
 * fifos and devices are left out.
 */
export async function listSource (root: string): Promise<SourceEntry[]> {
  const realRoot = await realpath(root)
  const entries: SourceEntry[] = []
  const walk = async (relativeDir: string): Promise<void> => {
    const names = (await readdir(join(realRoot, relativeDir))).sort()
    for (const name of names) {
      if (SKIPPED.has(name)) continue
      const path = relativeDir === '' ? name : `${relativeDir}/${name}`
      const absolute = join(realRoot, path)
      const info = await lstat(absolute)
      if (info.isDirectory()) {
        entries.push({ path, kind: 'dir', absolute, size: 0, executable: false, target: null })
        await walk(path)
      } else if (info.isSymbolicLink()) {
        const resolved = await realpath(absolute).catch(() => null)
        if (resolved === null) throw new BuildFailedError(`${path} is a link that leads nowhere in the source`)
        if (resolved !== realRoot && !resolved.startsWith(realRoot + sep)) throw new BuildFailedError(`${path} is a link to ${resolved}, outside the source`)
        entries.push({ path, kind: 'link', absolute, size: 0, executable: false, target: relative(dirname(absolute), resolved) || '.' })
      } else if (info.isFile()) {
        entries.push({ path, kind: 'file', absolute, size: info.size, executable: (info.mode & 0o111) !== 0, target: null })
      }
    }
  }
  await walk('')
  return entries
}

/** The sha256 of a tree: each entry's path, kind, then a file's execute bit, size and bytes, or a link's target. */
export class SourceDigest {
  private readonly hash: Hash = createHash('sha256')

  entry (entry: SourceEntry): void {
    if (entry.kind === 'file') this.hash.update(`${entry.path}\0file\0${entry.executable ? 'x' : '-'}\0${entry.size}\0`)
    else if (entry.kind === 'link') this.hash.update(`${entry.path}\0link\0${entry.target ?? ''}\0`)
    else this.hash.update(`${entry.path}\0dir\0`)
  }

  bytes (chunk: Buffer): void {
    this.hash.update(chunk)
  }

  hex (): string {
    return this.hash.digest('hex')
  }
}

/** A file's bytes, exactly as many as were listed even if it has grown since. */
export async function * fileBytes (entry: SourceEntry): AsyncGenerator<Buffer> {
  if (entry.size === 0) return
  for await (const chunk of createReadStream(entry.absolute, { start: 0, end: entry.size - 1 })) yield chunk as Buffer
}

export function fileMode (entry: SourceEntry): number {
  return entry.executable ? 0o755 : 0o644
}

/** The digest of a tree without copying it. */
export async function digestSource (root: string): Promise<string> {
  const digest = new SourceDigest()
  for (const entry of await listSource(root)) {
    digest.entry(entry)
    if (entry.kind === 'file') for await (const chunk of fileBytes(entry)) digest.bytes(chunk)
  }
  return digest.hex()
}

/** Copies a source tree into a fresh directory (owned by `owner` when given), digesting it on the way. */
export async function copyTree (source: string, target: string, owner: { uid: number, gid: number } | null): Promise<{ digest: string, files: number }> {
  const entries = await listSource(source)
  const digest = new SourceDigest()
  const own = async (path: string): Promise<void> => { if (owner !== null) await chown(path, owner.uid, owner.gid) }
  let files = 0
  await mkdir(target, { recursive: true, mode: 0o755 })
  await own(target)
  for (const entry of entries) {
    digest.entry(entry)
    const to = join(target, entry.path)
    if (entry.kind === 'dir') {
      await mkdir(to, { mode: 0o755 })
      await own(to)
    } else if (entry.kind === 'link') {
      await symlink(entry.target ?? '.', to)
    } else {
      await pipeline(async function * () {
        for await (const chunk of fileBytes(entry)) {
          digest.bytes(chunk)
          yield chunk
        }
      }, createWriteStream(to, { mode: fileMode(entry) }))
      await own(to)
      files++
    }
  }
  return { digest: digest.hex(), files }
}

/** Bytes of regular files under a directory, links not followed. */
export async function treeSize (dir: string): Promise<number> {
  let total = 0
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) total += await treeSize(path)
    else if (entry.isFile()) total += (await lstat(path)).size
  }
  return total
}
