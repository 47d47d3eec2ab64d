import { open } from 'node:fs/promises'
import { join } from 'node:path'
import { constants, inflateSync } from 'node:zlib'

/*
 * An object's size read from its header, so that learning it costs a few
 * bytes read rather than the object itself (or a `git cat-file -s` process).
 * The formats are git's: a loose object is zlib("<type> <size>\0<content>");
 * a pack entry starts with its type and size, and a delta's inflated data
 * with the sizes of its base and of the object it makes; a version 2 .idx
 * lists a pack's object names sorted, with their offsets.
 */

const OFS_DELTA = 6
const REF_DELTA = 7
const IDX_MAGIC = 0xff744f63
const FANOUT = 8
// A header sits in the first bytes; more is read only when a compressed stream opens with a long block header.
const FIRST_READ = 64
const LAST_READ = 32 * 1024

/** Inflates what a zlib stream's first bytes hold, however the stream goes on. */
function inflatePrefix (compressed: Buffer): Buffer {
  try {
    return inflateSync(compressed, { finishFlush: constants.Z_SYNC_FLUSH })
  } catch {
    return Buffer.alloc(0)
  }
}

/** A little-endian base-128 number as deltas and pack entries write it, or null when the bytes end first. */
function varint (bytes: Buffer, at: number): { value: number, next: number } | null {
  let value = 0
  for (let shift = 0; at < bytes.length; shift += 7) {
    const byte = bytes[at++]
    value += (byte & 0x7f) * 2 ** shift
    if (byte < 0x80) return { value, next: at }
  }
  return null
}

/** Reads growing prefixes of a file from `offset` until `parse` can tell; null when the object is not there at all. */
async function readHeader (path: string, offset: number, parse: (bytes: Buffer) => number | null): Promise<number | null> {
  let handle
  try {
    handle = await open(path, 'r')
  } catch (error) {
    if ((error as { code?: string }).code === 'ENOENT') return null
    throw error
  }
  try {
    for (let length = FIRST_READ; ; length *= 8) {
      const bytes = Buffer.alloc(length)
      const { bytesRead } = await handle.read(bytes, 0, length, offset)
      const size = parse(bytes.subarray(0, bytesRead))
      if (size !== null) return size
      if (bytesRead < length || length >= LAST_READ) throw new Error(`Unreadable object header in ${path} at ${offset}`)
    }
  } finally {
    await handle.close()
  }
}

function looseSize (compressed: Buffer): number | null {
  const header = inflatePrefix(compressed)
  const end = header.indexOf(0)
  if (end === -1) return null
  const match = /^[a-z]+ (\d+)$/.exec(header.subarray(0, end).toString('latin1'))
  if (match === null) throw new Error('Not a loose git object')
  return Number(match[1])
}

function packedSize (entry: Buffer): number | null {
  if (entry.length === 0) return null
  const type = (entry[0] >> 4) & 7
  const rest = entry[0] >= 0x80 ? varint(entry, 1) : { value: 0, next: 1 }
  if (rest === null) return null
  const size = (entry[0] & 0x0f) + rest.value * 16
  let at = rest.next
  if (type === OFS_DELTA) {
    while (at < entry.length && entry[at] >= 0x80) at++
    at++
  } else if (type === REF_DELTA) {
    at += 20
  } else {
    return size
  }
  if (at >= entry.length) return null
  const delta = inflatePrefix(entry.subarray(at))
  const base = varint(delta, 0)
  return base === null ? null : varint(delta, base.next)?.value ?? null
}

/** The size of a loose object, or null when it is not loose. */
export async function looseObjectSize (gitdir: string, oid: string): Promise<number | null> {
  return await readHeader(join(gitdir, 'objects', oid.slice(0, 2), oid.slice(2)), 0, looseSize)
}

/** The size of the object at `offset` of a pack file. */
export async function packedObjectSize (packPath: string, offset: number): Promise<number> {
  const size = await readHeader(packPath, offset, packedSize)
  if (size === null) throw Object.assign(new Error(`Pack ${packPath} is gone`), { code: 'ENOENT' })
  return size
}

/** Where a version 2 pack index puts `oid` in its pack, or null when that pack does not hold it. */
export function offsetInIndex (idx: Buffer, oid: string): number | null {
  if (idx.length < FANOUT + 1024 || idx.readUInt32BE(0) !== IDX_MAGIC || idx.readUInt32BE(4) !== 2) throw new Error('Not a version 2 pack index')
  const name = Buffer.from(oid, 'hex')
  const count = idx.readUInt32BE(FANOUT + 255 * 4)
  const names = FANOUT + 1024
  let low = name[0] === 0 ? 0 : idx.readUInt32BE(FANOUT + (name[0] - 1) * 4)
  let high = idx.readUInt32BE(FANOUT + name[0] * 4)
  while (low < high) {
    const middle = (low + high) >>> 1
    const order = name.compare(idx, names + middle * 20, names + middle * 20 + 20)
    if (order < 0) high = middle
    else if (order > 0) low = middle + 1
    else {
      const offsets = names + count * 24
      const offset = idx.readUInt32BE(offsets + middle * 4)
      // Past 2 GiB the offset is an index into a table of 64-bit ones that follows.
      return offset < 0x80000000 ? offset : Number(idx.readBigUInt64BE(offsets + count * 4 + (offset - 0x80000000) * 8))
    }
  }
  return null
}
