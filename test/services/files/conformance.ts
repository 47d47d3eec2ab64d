import { createHash, randomBytes } from 'node:crypto'
import { Readable } from 'node:stream'
import v8 from 'node:v8'
import { runInNewContext } from 'node:vm'
import type { Test } from 'tap'
import { newId } from '../../../services/platform/ids.js'
import type { FileStore } from '../../../services/files/file-store.js'

/**
 * Engine-agnostic FileStore cases. Every case works under a prefix of its
 * own, so the suite can run against a shared bucket or directory.
 */

// A full collection before each sample, so the memory check sees what is retained rather than garbage not yet collected.
v8.setFlagsFromString('--expose-gc')
const collectGarbage = runInNewContext('gc') as () => void

export const sha256 = (data: Buffer): string => createHash('sha256').update(data).digest('hex')

export async function collect (stream: Readable): Promise<Buffer> {
  const parts: Buffer[] = []
  for await (const chunk of stream) parts.push(chunk as Buffer)
  return Buffer.concat(parts)
}

/** A Readable of `data` in pieces of `piece` bytes, so writes see many chunks. */
export function streamOf (data: Buffer, piece = 7_000): Readable {
  return Readable.from((function * () {
    for (let at = 0; at < data.length; at += piece) yield data.subarray(at, at + piece)
  })(), { objectMode: false })
}

/** Sends `prefix`, then fails, like a client that disconnects mid-upload. */
export function failingStream (prefix: Buffer): Readable {
  return Readable.from((async function * () {
    yield prefix
    await new Promise((resolve) => setImmediate(resolve))
    throw new Error('connection reset')
  })(), { objectMode: false })
}

export const BAD_KEYS: unknown[] = [
  '', '/abs', 'a/../b', '..', 'a//b', 'a/', '/', 'a/b.c', 'a\\b', 'a b', 'ä', 'a/./b', 'x'.repeat(513), 42, null, undefined
]

export async function fileStoreConformance (t: Test, open: () => Promise<FileStore>): Promise<void> {
  const files = await open()
  const fresh = (): string => `conf/${newId()}`

  t.test('write a Buffer or a Readable, then stat and read it back', async (t) => {
    const base = fresh()
    const small = Buffer.from('hello, plinth')
    t.same(await files.write(`${base}/small`, small), { size: small.length, sha256: sha256(small) }, 'write reports size and sha256')
    t.same(await files.stat(`${base}/small`), { size: small.length })
    t.same(await collect(await files.read(`${base}/small`)), small)

    const big = randomBytes(300_001)
    t.same(await files.write(`${base}/streamed`, streamOf(big)), { size: big.length, sha256: sha256(big) })
    t.same(await collect(await files.read(`${base}/streamed`)), big, 'a streamed write reads back byte for byte')

    const empty = Buffer.alloc(0)
    t.same(await files.write(`${base}/empty`, empty), { size: 0, sha256: sha256(empty) })
    t.same(await files.stat(`${base}/empty`), { size: 0 }, 'an empty object exists')
    t.equal((await collect(await files.read(`${base}/empty`))).length, 0)
    t.equal((await collect(await files.read(`${base}/empty`, { start: 0, end: 10 }))).length, 0)
  })

  t.test('a replace is whole: readers get the new bytes, and a key and a key under it coexist', async (t) => {
    const base = fresh()
    await files.write(`${base}/doc`, Buffer.from('first version, longer than the second'))
    await files.write(`${base}/doc`, Buffer.from('second'))
    t.same(await files.stat(`${base}/doc`), { size: 6 })
    t.equal((await collect(await files.read(`${base}/doc`))).toString(), 'second')
    await files.write(`${base}/doc/child`, Buffer.from('under'))
    t.equal((await collect(await files.read(`${base}/doc`))).toString(), 'second', 'the parent key is still its own object')
    t.equal((await collect(await files.read(`${base}/doc/child`))).toString(), 'under')

    const a = randomBytes(200_000)
    const b = randomBytes(150_000)
    await Promise.all([files.write(`${base}/race`, streamOf(a)), files.write(`${base}/race`, streamOf(b))])
    const winner = await collect(await files.read(`${base}/race`))
    t.ok(winner.equals(a) || winner.equals(b), 'two concurrent writes leave one of them whole, never a mix')
    t.same(await files.stat(`${base}/race`), { size: winner.length })
  })

  t.test('byte ranges are inclusive and clamp at the end', async (t) => {
    const key = `${fresh()}/ranged`
    // Larger than one GridFS chunk (255 KiB), so ranges cross chunk boundaries.
    const data = randomBytes(600 * 1024 + 17)
    await files.write(key, streamOf(data, 65_536))
    const last = data.length - 1
    const boundary = 255 * 1024
    const cases: Array<[string, number, number | undefined, Buffer]> = [
      ['the first byte', 0, 0, data.subarray(0, 1)],
      ['the first ten bytes', 0, 9, data.subarray(0, 10)],
      ['the last byte', last, last, data.subarray(last)],
      ['from an offset to the end', 1000, undefined, data.subarray(1000)],
      ['across a chunk boundary', boundary - 3, boundary + 2, data.subarray(boundary - 3, boundary + 3)],
      ['starting on a chunk boundary', boundary, boundary, data.subarray(boundary, boundary + 1)],
      ['ending just before a boundary', 5, boundary - 1, data.subarray(5, boundary)],
      ['an end past the size clamps', last - 4, last + 1000, data.subarray(last - 4)],
      ['a start at the size is empty', data.length, data.length + 5, Buffer.alloc(0)],
      ['a start past the size is empty', data.length + 99, undefined, Buffer.alloc(0)],
      ['the whole object by range', 0, last, data]
    ]
    for (const [what, start, end, expected] of cases) {
      const got = await collect(await files.read(key, end === undefined ? { start } : { start, end }))
      t.ok(got.equals(expected), `${what}: ${got.length} bytes, wanted ${expected.length}`)
    }
    for (const bad of [{ start: -1, end: 3 }, { start: 5, end: 4 }, { start: 1.5 }, { start: 0, end: Number.NaN }]) {
      await t.rejects(files.read(key, bad), RangeError, `refused: ${JSON.stringify(bad)}`)
    }
  })

  t.test('missing objects: stat is null, read is a 404, delete is idempotent', async (t) => {
    const key = `${fresh()}/gone`
    t.equal(await files.stat(key), null)
    await t.rejects(files.read(key), { code: 'APP_FILE_NOT_FOUND', status: 404 })
    await t.resolves(files.delete(key), 'deleting a missing object is fine')
    await files.write(key, Buffer.from('x'))
    await files.delete(key)
    await files.delete(key)
    t.equal(await files.stat(key), null)
    await t.rejects(files.read(key), { code: 'APP_FILE_NOT_FOUND' })
  })

  t.test('deletePrefix removes whole segments only', async (t) => {
    const base = fresh()
    const keys = ['a', 'a/1', 'a/1/deep', 'a/2', 'ab', 'ab/1', 'b']
    for (const key of keys) await files.write(`${base}/${key}`, Buffer.from(key))
    await files.deletePrefix(`${base}/a`)
    const left: string[] = []
    for (const key of keys) if (await files.stat(`${base}/${key}`) !== null) left.push(key)
    t.same(left, ['ab', 'ab/1', 'b'], '`a` and everything under it went; `ab` is a different segment')
    await t.resolves(files.deletePrefix(`${base}/a`), 'again: nothing left to delete')
    await t.resolves(files.deletePrefix(`${base}/never`), 'a prefix that never existed')
    await files.write(`${base}/a/1`, Buffer.from('back'))
    t.equal((await collect(await files.read(`${base}/a/1`))).toString(), 'back', 'the prefix can be written again')
  })

  t.test('list walks the objects of a prefix: whole segments, each key once, never staged bytes', async (t) => {
    const base = fresh()
    const listed = async (prefix: string): Promise<string[]> => {
      const keys: string[] = []
      for await (const object of files.list(prefix)) {
        t.type(object.writtenAt, Date)
        keys.push(object.key.slice(base.length + 1))
      }
      return keys.sort()
    }
    for (const key of ['a', 'a/1', 'a/1/deep', 'a/2', 'ab', 'ab/1', 'b']) await files.write(`${base}/${key}`, Buffer.from(key))
    await files.write(`${base}/a/2`, Buffer.from('replaced'))
    await files.writePart(`${base}/a/staged`, 0, Buffer.from('part'))
    await files.writePart(`${base}/a/sealed`, 0, Buffer.from('part'))
    await files.seal(`${base}/a/sealed`, `${base}/a/3`)
    await files.delete(`${base}/a/1/deep`)
    t.same(await listed(`${base}/a`), ['a', 'a/1', 'a/2', 'a/3'], 'a replaced key once; staged, deleted and sibling keys not at all')
    t.same(await listed(base), ['a', 'a/1', 'a/2', 'a/3', 'ab', 'ab/1', 'b'])
    t.same(await listed(`${base}/never`), [], 'a prefix that never existed lists nothing')
    await t.rejects(files.list('a/../b')[Symbol.asyncIterator]().next(), { code: 'APP_INVALID_FILE_KEY' })
  })

  t.test('parts staged at their offsets in any order seal into one object', async (t) => {
    const base = fresh()
    const parts = [randomBytes(100_000), randomBytes(100_000), randomBytes(100_000), randomBytes(12_345)]
    const whole = Buffer.concat(parts)
    const staged = `${base}/upload`
    for (const i of [3, 1, 0]) await files.writePart(staged, i * 100_000, parts[i])
    await files.writePart(staged, 100_000, randomBytes(100_000))
    await files.writePart(staged, 100_000, parts[1])
    await files.writePart(staged, 200_000, parts[2])
    t.equal(await files.stat(staged), null, 'staged bytes are not an object')
    await t.rejects(files.read(staged), { code: 'APP_FILE_NOT_FOUND' })

    const info = await files.seal(staged, `${base}/whole`)
    t.same(info, { size: whole.length, sha256: sha256(whole) }, 'size and sha256 as node:crypto computes them, the rewritten part as last written')
    t.ok((await collect(await files.read(`${base}/whole`))).equals(whole))
    t.same(await files.seal(staged, `${base}/again`), info, 'the staged bytes stay until deleted, so a failed next step can seal again')
    await files.delete(`${base}/again`)
    t.ok((await collect(await files.read(`${base}/whole`))).equals(whole), 'deleting one sealed copy leaves the other')

    await files.deletePrefix(staged)
    t.same(await files.seal(staged, `${base}/empty`), { size: 0, sha256: sha256(Buffer.alloc(0)) }, 'nothing staged: an empty object')
    t.ok((await collect(await files.read(`${base}/whole`))).equals(whole), 'dropping the staged bytes leaves the sealed object')

    await files.writePart(staged, 0, Buffer.from('replacement'))
    await files.seal(staged, `${base}/whole`)
    t.equal((await collect(await files.read(`${base}/whole`))).toString(), 'replacement', 'sealing over an object replaces it')
    await t.rejects(files.writePart(staged, -1, Buffer.from('x')), RangeError, 'a negative offset')
    await t.rejects(files.writePart(staged, 1.5, Buffer.from('x')), RangeError, 'a fractional offset')
  })

  t.test('a write that fails mid-stream leaves no partial object', async (t) => {
    const base = fresh()
    await t.rejects(files.write(`${base}/new`, failingStream(randomBytes(100_000))), { message: 'connection reset' })
    t.equal(await files.stat(`${base}/new`), null, 'nothing visible')
    await t.rejects(files.read(`${base}/new`), { code: 'APP_FILE_NOT_FOUND' })
    await files.write(`${base}/old`, Buffer.from('kept'))
    await t.rejects(files.write(`${base}/old`, failingStream(randomBytes(100_000))), { message: 'connection reset' })
    t.equal((await collect(await files.read(`${base}/old`))).toString(), 'kept', 'a failed replace keeps the old object')
  })

  t.test('bad keys are refused by every operation', async (t) => {
    const good = `${fresh()}/good`
    await files.write(good, Buffer.from('g'))
    for (const bad of BAD_KEYS) {
      const label = JSON.stringify(bad)?.slice(0, 20) ?? String(bad)
      const refused = { code: 'APP_INVALID_FILE_KEY', status: 400 }
      const key = bad as string
      await t.rejects(files.write(key, Buffer.from('x')), refused, `write ${label}`)
      await t.rejects(files.read(key), refused, `read ${label}`)
      await t.rejects(files.stat(key), refused, `stat ${label}`)
      await t.rejects(files.delete(key), refused, `delete ${label}`)
      await t.rejects(files.deletePrefix(key), refused, `deletePrefix ${label}`)
      await t.rejects(files.writePart(key, 0, Buffer.from('x')), refused, `writePart ${label}`)
      await t.rejects(files.seal(key, `${good}2`), refused, `seal from ${label}`)
      await t.rejects(files.seal(good, key), refused, `seal into ${label}`)
    }
    t.same(await files.stat(good), { size: 1 }, 'nothing was touched')
    t.equal(await files.stat(`${good}2`), null)
  })

  t.test('a 20 MB object streams in and out without being held in memory', async (t) => {
    const key = `${fresh()}/big`
    const total = 20 * 1024 * 1024
    const piece = 64 * 1024
    // Views over one pattern buffer: the source allocates nothing, so what stays allocated is the store's doing.
    const pattern = randomBytes(1024 * 1024)
    const expected = createHash('sha256')
    const retained = (): number => { collectGarbage(); return process.memoryUsage().arrayBuffers }
    const baseline = retained()
    let peak = 0
    const source = Readable.from((function * () {
      for (let at = 0, i = 0; at < total; at += piece, i++) {
        const offset = (i * 4099) % (pattern.length - piece)
        const chunk = pattern.subarray(offset, offset + piece)
        expected.update(chunk)
        if (i % 40 === 39) peak = Math.max(peak, retained() - baseline)
        yield chunk
      }
    })(), { objectMode: false })
    const info = await files.write(key, source)
    const digest = expected.digest('hex')
    t.same(info, { size: total, sha256: digest })
    t.ok(peak < 8 * 1024 * 1024, `${Math.round(peak / 1024)} KiB stayed allocated at most while writing 20 MiB`)

    const readBack = createHash('sha256')
    let size = 0
    for await (const chunk of await files.read(key)) {
      readBack.update(chunk as Buffer)
      size += (chunk as Buffer).length
    }
    t.equal(size, total)
    t.equal(readBack.digest('hex'), digest, 'read back byte for byte')
    await files.delete(key)
  })
}
