import { createHash, randomBytes } from 'node:crypto'
import { constants } from 'node:fs'
import { copyFile, link, mkdir, open, readdir, rename, rm, stat, utimes, type FileHandle } from 'node:fs/promises'
import { basename, dirname, join } from 'node:path'
import type { Readable } from 'node:stream'
import {
  assertKey, assertOffset, clampRange, digesting, emptyStream, fileNotFound,
  type ByteRange, type FileStore, type ListedObject, type ObjectInfo
} from './file-store.js'

/**
 * The embedded engine: one file per object under `root` (the caller passes
 * DATA_DIR/files). Objects carry a suffix so that a key and a key under it
 * (`a/b` and `a/b/c`) can both exist, as on GridFS: the file `a/b.obj` sits
 * beside the directory `a/b`. Temp files start with a dot, which no key can.
 * Bytes staged under a key live in one file with their own suffix, written
 * in place at each part's offset, so sealing them is a link, not a copy.
 */
const OBJECT_SUFFIX = '.obj'
const STAGED_SUFFIX = '.part'
const READ_BUFFER_BYTES = 4 * 1024 * 1024
// Records' files are no one else's business on the machine: owner-only, as the store's database is.
const PRIVATE_FILE = 0o600
const PRIVATE_DIR = { recursive: true, mode: 0o700 }

function isMissing (error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | null)?.code
  return code === 'ENOENT' || code === 'ENOTDIR'
}

/** `position` null: at the file's current position. */
async function writeFully (handle: FileHandle, chunk: Buffer, position: number | null = null): Promise<void> {
  let offset = 0
  while (offset < chunk.length) {
    const { bytesWritten } = await handle.write(chunk, offset, chunk.length - offset, position === null ? null : position + offset)
    offset += bytesWritten
  }
}

// Same directory as the target, so the rename cannot cross file systems and stays atomic.
const tempBeside = (target: string): string => join(dirname(target), `.${basename(target)}.${randomBytes(8).toString('hex')}.tmp`)

/** A rename is durable only once its directory entry is on disk. */
async function syncDirectory (dir: string): Promise<void> {
  const handle = await open(dir, 'r')
  try {
    await handle.sync()
  } finally {
    await handle.close()
  }
}

export class LocalFileStore implements FileStore {
  readonly engine = 'local' as const

  constructor (readonly root: string) {}

  private objectPath (key: string): string {
    assertKey(key)
    return join(this.root, ...key.split('/')) + OBJECT_SUFFIX
  }

  private stagedPath (key: string): string {
    return this.objectPath(key).slice(0, -OBJECT_SUFFIX.length) + STAGED_SUFFIX
  }

  /** A temp file beside the target, synced and renamed into place, so readers see the old object or the whole new one. */
  async write (key: string, body: Buffer | Readable): Promise<ObjectInfo> {
    const target = this.objectPath(key)
    const dir = dirname(target)
    await mkdir(dir, PRIVATE_DIR)
    const temp = tempBeside(target)
    const handle = await open(temp, 'wx', PRIVATE_FILE)
    let handleOpen = true
    let committed = false
    try {
      const digest = digesting(body)
      for await (const chunk of digest.chunks) await writeFully(handle, chunk)
      // Data on disk before the name points at it: a crash must not leave a renamed but empty file.
      await handle.sync()
      await handle.close()
      handleOpen = false
      await rename(temp, target)
      committed = true
      await syncDirectory(dir)
      return digest.result()
    } finally {
      if (handleOpen) await handle.close().catch(() => {})
      if (!committed) await rm(temp, { force: true })
    }
  }

  async read (key: string, range?: ByteRange): Promise<Readable> {
    const path = this.objectPath(key)
    let handle: FileHandle
    try {
      handle = await open(path, 'r')
    } catch (error) {
      if (isMissing(error)) throw fileNotFound(key)
      throw error
    }
    // The open descriptor pins this version: a concurrent replace or delete does not change what this reader gets.
    try {
      const bounds = clampRange(range, (await handle.stat()).size)
      if (bounds === null) {
        await handle.close()
        return emptyStream()
      }
      return handle.createReadStream({ start: bounds.start, end: bounds.end })
    } catch (error) {
      await handle.close().catch(() => {})
      throw error
    }
  }

  async stat (key: string): Promise<{ size: number } | null> {
    try {
      return { size: (await stat(this.objectPath(key))).size }
    } catch (error) {
      if (isMissing(error)) return null
      throw error
    }
  }

  async delete (key: string): Promise<void> {
    await rm(this.objectPath(key), { force: true })
  }

  async deletePrefix (prefix: string): Promise<void> {
    const object = this.objectPath(prefix)
    await rm(object.slice(0, -OBJECT_SUFFIX.length), { recursive: true, force: true })
    await rm(object, { force: true })
    await rm(this.stagedPath(prefix), { force: true })
  }

  async * list (prefix: string): AsyncGenerator<ListedObject> {
    const object = this.objectPath(prefix)
    const itself = await this.listed(object, prefix)
    if (itself !== null) yield itself
    yield * this.walk(object.slice(0, -OBJECT_SUFFIX.length), prefix)
  }

  private async * walk (dir: string, prefix: string): AsyncGenerator<ListedObject> {
    let entries
    try {
      entries = await readdir(dir, { withFileTypes: true })
    } catch (error) {
      if (isMissing(error)) return
      throw error
    }
    // Temp files start with a dot and staged bytes carry their own suffix: neither is an object.
    for (const entry of entries) {
      if (entry.name.startsWith('.')) continue
      if (entry.isDirectory()) yield * this.walk(join(dir, entry.name), `${prefix}/${entry.name}`)
      else if (entry.isFile() && entry.name.endsWith(OBJECT_SUFFIX)) {
        const found = await this.listed(join(dir, entry.name), `${prefix}/${entry.name.slice(0, -OBJECT_SUFFIX.length)}`)
        if (found !== null) yield found
      }
    }
  }

  private async listed (path: string, key: string): Promise<ListedObject | null> {
    try {
      const info = await stat(path)
      return info.isFile() ? { key, writtenAt: info.mtime } : null
    } catch (error) {
      if (isMissing(error)) return null
      throw error
    }
  }

  async writePart (key: string, offset: number, body: Buffer): Promise<void> {
    const path = this.stagedPath(key)
    assertOffset(offset)
    await mkdir(dirname(path), PRIVATE_DIR)
    // Neither truncating nor appending: parts land at their offsets in whatever order they come.
    const handle = await open(path, constants.O_WRONLY | constants.O_CREAT, PRIVATE_FILE)
    try {
      await writeFully(handle, body, offset)
      await handle.datasync()
    } finally {
      await handle.close()
    }
  }

  /**
   * Hashes the staged file and hard-links it into place under a temp name
   * renamed over the target: the bytes reach the disk once, when their parts
   * were written, whatever the file's size.
   */
  async seal (key: string, target: string, sha256?: string): Promise<ObjectInfo> {
    const staged = this.stagedPath(key)
    const targetPath = this.objectPath(target)
    let handle: FileHandle
    try {
      handle = await open(staged, 'r')
    } catch (error) {
      if (isMissing(error)) return await this.write(target, Buffer.alloc(0))
      throw error
    }
    let info: ObjectInfo
    try {
      info = sha256 === undefined ? await digestFile(handle) : { size: (await handle.stat()).size, sha256 }
      await handle.sync()
    } finally {
      await handle.close()
    }
    const dir = dirname(targetPath)
    await mkdir(dir, PRIVATE_DIR)
    const temp = tempBeside(targetPath)
    await linkOrCopy(staged, temp)
    try {
      // A link keeps the staged file's time, which may be a day old: the object counts as written now (see list).
      const now = new Date()
      await utimes(temp, now, now)
      await rename(temp, targetPath)
    } catch (error) {
      await rm(temp, { force: true })
      throw error
    }
    await syncDirectory(dir)
    return info
  }
}

/** A hard link, or where the two paths sit on different file systems (a mount under the root), a synced copy. */
async function linkOrCopy (source: string, target: string): Promise<void> {
  try {
    await link(source, target)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EXDEV') throw error
    await copyFile(source, target, constants.COPYFILE_EXCL)
    const handle = await open(target, 'r')
    try {
      await handle.sync()
    } finally {
      await handle.close()
    }
  }
}

/** Size and SHA-256 of an open file, read through one buffer. */
async function digestFile (handle: FileHandle): Promise<ObjectInfo> {
  const hash = createHash('sha256')
  const buffer = Buffer.allocUnsafe(READ_BUFFER_BYTES)
  let size = 0
  for (;;) {
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, size)
    if (bytesRead === 0) break
    hash.update(buffer.subarray(0, bytesRead))
    size += bytesRead
  }
  return { size, sha256: hash.digest('hex') }
}
