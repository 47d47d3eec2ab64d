import { createHash, randomBytes } from 'node:crypto'
import { mkdir, open, rename, rm, stat, type FileHandle } from 'node:fs/promises'
import { basename, dirname, join } from 'node:path'
import type { Readable } from 'node:stream'
import {
  assertKey, clampRange, digesting, emptyStream, fileNotFound,
  type ByteRange, type FileStore, type ObjectInfo
} from './file-store.js'

/**
 * The embedded engine: one file per object under `root` (the caller passes
 * DATA_DIR/files). Objects carry a suffix so that a key and a key under it
 * (`a/b` and `a/b/c`) can both exist, as on GridFS: the file `a/b.obj` sits
 * beside the directory `a/b`. Temp files start with a dot, which no key can.
 */
const OBJECT_SUFFIX = '.obj'
const COPY_BUFFER_BYTES = 4 * 1024 * 1024

function isMissing (error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | null)?.code
  return code === 'ENOENT' || code === 'ENOTDIR'
}

async function writeFully (handle: FileHandle, chunk: Buffer): Promise<void> {
  let offset = 0
  while (offset < chunk.length) {
    const { bytesWritten } = await handle.write(chunk, offset, chunk.length - offset)
    offset += bytesWritten
  }
}

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

  async write (key: string, body: Buffer | Readable): Promise<ObjectInfo> {
    return await this.writeAtomically(key, async (handle) => {
      const digest = digesting(body)
      for await (const chunk of digest.chunks) await writeFully(handle, chunk)
      return digest.result()
    })
  }

  /**
   * Writes a temp file beside the target with `fill`, syncs it and renames it
   * into place, so readers see the old object or the whole new one.
   */
  private async writeAtomically (key: string, fill: (handle: FileHandle) => Promise<ObjectInfo>): Promise<ObjectInfo> {
    const target = this.objectPath(key)
    const dir = dirname(target)
    await mkdir(dir, { recursive: true })
    // Same directory as the target, so the rename cannot cross file systems and stays atomic.
    const temp = join(dir, `.${basename(target)}.${randomBytes(8).toString('hex')}.tmp`)
    const handle = await open(temp, 'wx')
    let handleOpen = true
    let committed = false
    try {
      const info = await fill(handle)
      // Data on disk before the name points at it: a crash must not leave a renamed but empty file.
      await handle.sync()
      await handle.close()
      handleOpen = false
      await rename(temp, target)
      committed = true
      await syncDirectory(dir)
      return info
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
  }

  /** File to file through one reused buffer: no streams, so joining an upload's chunks runs at disk speed. */
  async concat (target: string, sources: readonly string[]): Promise<ObjectInfo> {
    assertKey(target)
    const paths = sources.map((key) => this.objectPath(key))
    return await this.writeAtomically(target, async (output) => {
      const hash = createHash('sha256')
      const buffer = Buffer.allocUnsafe(COPY_BUFFER_BYTES)
      let size = 0
      for (let i = 0; i < paths.length; i++) {
        let input: FileHandle
        try {
          input = await open(paths[i], 'r')
        } catch (error) {
          if (isMissing(error)) throw fileNotFound(sources[i])
          throw error
        }
        try {
          for (;;) {
            const { bytesRead } = await input.read(buffer, 0, buffer.length, null)
            if (bytesRead === 0) break
            const chunk = buffer.subarray(0, bytesRead)
            hash.update(chunk)
            await writeFully(output, chunk)
            size += bytesRead
          }
        } finally {
          await input.close()
        }
      }
      return { size, sha256: hash.digest('hex') }
    })
  }
}
