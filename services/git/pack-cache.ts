import { readdir, readFile, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { BoundedMap } from '../cache/bounded-map.js'

/** The bytes of pack data the git reader keeps in memory, all repositories together. */
export const PACK_CACHE_BYTES = 256 * 1024 * 1024
// BoundedMap bounds the count as well; the byte budget is the bound that matters.
const PACK_SETS_MAX = 1024
// isomorphic-git keeps an .idx parsed into a Map keyed by hex object names, measured at 3.7 times the file's size
// (50,000 objects); the file itself is kept here too, to look object sizes up in.
const INDEX_WEIGHT = 5

interface PackFile { name: string, size: number, mtimeMs: number, ino: number }
async function packFiles (gitdir: string): Promise<PackFile[]> {
  const dir = join(gitdir, 'objects', 'pack')
  const names = await readdir(dir).catch((error: { code?: string }) => {
    if (error.code === 'ENOENT') return []
    throw error
  })
  const files = await Promise.all(names.filter((name) => name.endsWith('.pack') || name.endsWith('.idx')).sort().map(async (name) => {
    // A repack may remove a file between the listing and its stat: it is then not part of the set.
    const info = await stat(join(dir, name)).catch(() => null)
    return info === null ? null : { name, size: info.size, mtimeMs: info.mtimeMs, ino: info.ino }
  }))
  return files.filter((file) => file !== null)
}

/**
 * One repository's pack files as they are at one moment, with what reading
 * them keeps in memory: the `cache` object isomorphic-git fills (each pack
 * whole and its parsed index; it memoizes no objects of a pack opened from
 * its .idx, which a test pins) and the .idx files object sizes are looked
 * up in. Its weight is therefore known from the files' sizes alone.
 */
export class PackSet {
  /** Given to isomorphic-git as its `cache` option. */
  readonly cache: Record<symbol, unknown> = {}
  readonly weight: number
  private readonly indexFiles = new Map<string, Promise<Buffer>>()
  /** The .idx files whose pack is there too. */
  readonly indexes: string[]

  constructor (readonly gitdir: string, readonly key: string, files: PackFile[]) {
    const packs = new Set(files.filter((file) => file.name.endsWith('.pack')).map((file) => file.name.slice(0, -'.pack'.length)))
    this.indexes = files.filter((file) => file.name.endsWith('.idx') && packs.has(file.name.slice(0, -'.idx'.length))).map((file) => file.name)
    this.weight = files.reduce((sum, file) => sum + (file.name.endsWith('.idx') ? file.size * INDEX_WEIGHT : file.size), 0)
  }

  async index (name: string): Promise<Buffer> {
    let read = this.indexFiles.get(name)
    if (read === undefined) {
      read = readFile(join(this.gitdir, 'objects', 'pack', name))
      this.indexFiles.set(name, read)
      read.catch(() => { this.indexFiles.delete(name) })
    }
    return await read
  }
}

/**
 * The git reader's one cache: a PackSet per repository and set of pack
 * files, in the shared BoundedMap, weighed by the bytes the set holds. The
 * key names every pack and index file with its size, mtime and inode, so a
 * push that brings a pack, a repack or a repository deleted and made again
 * reads through a new set, and the old one ages out of the map. Pack files
 * never change under their names, which is what makes a set safe to reuse.
 */
export class PackCache {
  private readonly sets: BoundedMap<string, PackSet>

  constructor (maxBytes = PACK_CACHE_BYTES) {
    this.sets = new BoundedMap(PACK_SETS_MAX, undefined, maxBytes)
  }

  /** The bytes held, all sets together. */
  get weight (): number {
    return this.sets.weight
  }

  get size (): number {
    return this.sets.size
  }

  /** The set for the repository's pack files as they are now; one too big for the budget is used once and not kept. */
  async of (gitdir: string): Promise<PackSet> {
    const files = await packFiles(gitdir)
    const key = `${gitdir}\0${files.map((file) => `${file.name}:${file.size}:${file.mtimeMs}:${file.ino}`).join('\0')}`
    const known = this.sets.get(key)
    if (known !== undefined) return known
    const set = new PackSet(gitdir, key, files)
    if (files.length > 0) this.sets.set(key, set, set.weight)
    return set
  }
}
