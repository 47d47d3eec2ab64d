import { createHash, type Hash } from 'node:crypto'
import { createReadStream, createWriteStream } from 'node:fs'
import { chown, lstat, mkdir, readdir, readlink, symlink } from 'node:fs/promises'
import { dirname, join, relative, resolve, sep } from 'node:path'
import { pipeline } from 'node:stream/promises'
import { Transform } from 'node:stream'
import { BuildFailedError } from '../runtime.js'

/** Never part of an artifact: version-control metadata. */
const SKIPPED = new Set(['.git'])

/**
 * Copies a source tree into a fresh directory and digests it on the way:
 * sha256 over every entry, depth first with each directory's names sorted, each
 * as its path, its kind and its bytes (or a link's target). A link that leads outside the tree is
 * refused, so an uploaded archive cannot point a build or the gateway at the
 * host's files.
 */
export async function copyTree (source: string, target: string, owner: { uid: number, gid: number } | null): Promise<{ digest: string, files: number }> {
  const hash = createHash('sha256')
  const root = resolve(source)
  let files = 0
  const walk = async (relativeDir: string): Promise<void> => {
    const entries = (await readdir(join(root, relativeDir), { withFileTypes: true })).map(entry => entry.name).sort()
    for (const name of entries) {
      if (SKIPPED.has(name)) continue
      const path = relativeDir === '' ? name : `${relativeDir}/${name}`
      const from = join(root, path)
      const to = join(target, path)
      const info = await lstat(from)
      if (info.isDirectory()) {
        hash.update(`${path}\0dir\0`)
        await mkdir(to, { mode: 0o755 })
        await own(to, owner)
        await walk(path)
      } else if (info.isSymbolicLink()) {
        const link = await readlink(from)
        const resolved = resolve(dirname(from), link)
        if (resolved !== root && !resolved.startsWith(root + sep)) throw new BuildFailedError(`${path} is a link to ${link}, outside the source`)
        hash.update(`${path}\0link\0${relative(dirname(from), resolved)}\0`)
        await symlink(link, to)
      } else if (info.isFile()) {
        hash.update(`${path}\0file\0${info.size}\0`)
        await pipeline(createReadStream(from), hashing(hash), createWriteStream(to, { mode: info.mode & 0o755 | 0o644 }))
        await own(to, owner)
        files++
      }
    }
  }
  await mkdir(target, { recursive: true, mode: 0o755 })
  await own(target, owner)
  await walk('')
  return { digest: hash.digest('hex'), files }
}

function hashing (hash: Hash): Transform {
  return new Transform({
    transform (chunk: Buffer, _encoding, done) { hash.update(chunk); done(null, chunk) }
  })
}

async function own (path: string, owner: { uid: number, gid: number } | null): Promise<void> {
  if (owner !== null) await chown(path, owner.uid, owner.gid)
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

/** Hands a tree the build wrote back to the server's user, so the sandbox user cannot change an artifact later. */
export async function ownTree (dir: string, owner: { uid: number, gid: number }): Promise<void> {
  await chown(dir, owner.uid, owner.gid)
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) await ownTree(path, owner)
    else if (entry.isFile()) await chown(path, owner.uid, owner.gid)
  }
}
