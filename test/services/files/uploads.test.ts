import t, { type Test } from 'tap'
import { createHash, randomBytes } from 'node:crypto'
import { truncateSync } from 'node:fs'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import { ManualClock } from '../../../services/platform/clock.js'
import { LocalFileStore } from '../../../services/files/local-file-store.js'
import {
  UPLOAD_SESSIONS_COLLECTION, UPLOADS_EXPIRE_JOB, UploadSessions, type StoredFile, type UploadOwner, type UploadSessionsDeps
} from '../../../services/files/uploads.js'
import { createIdGenerator } from '../../../services/platform/ids.js'
import { openStore, type Store } from '../../../services/store/index.js'
import { tempDir } from '../../helper.js'
import { collect, failingStream, sha256, streamOf } from './conformance.js'
import { fileStoreFromEnv, storedKeys } from './engines.js'

const owner: UploadOwner = { projectId: 'p1', table: 'posts', recordId: 'r1', field: 'cover' }
const CHUNK = 1024
const HOUR = 3_600_000

async function setup (t: Test, options: Partial<UploadSessionsDeps> = {}) {
  const dir = tempDir(t, 'plinth-uploads-')
  const clock = new ManualClock(Date.UTC(2026, 0, 1))
  const newId = createIdGenerator(() => clock.nowMs())
  const store: Store = await openStore({ dataDir: dir, mongodbUrl: null, mongodbDb: 'plinth' }, newId)
  t.teardown(async () => { await store.close() })
  const files = await fileStoreFromEnv(t)
  const uploads = new UploadSessions(store, files, { clock, newId, chunkSize: CHUNK, ...options })
  await uploads.init()
  /** The object keys and the keys with staged bytes the FileStore holds under `prefix`. */
  const stored = async (prefix: string) => await storedKeys(files, prefix)
  const attached: StoredFile[] = []
  const attach = async (file: StoredFile): Promise<void> => { attached.push(file) }
  return { store, clock, files, uploads, stored, attached, attach }
}

const pieces = (data: Buffer, size = CHUNK): Buffer[] => {
  const out: Buffer[] = []
  for (let at = 0; at < data.length; at += size) out.push(data.subarray(at, at + size))
  return out
}

t.test('start describes the session and refuses bad declarations', async (t) => {
  const { uploads } = await setup(t, { maxSize: 10 * CHUNK })
  const view = await uploads.start(owner, { name: 'cat.png', size: 2 * CHUNK + 10, type: 'Image/PNG; q=1', createdBy: 'u1' })
  t.match(view, {
    ...owner,
    name: 'cat.png',
    size: 2 * CHUNK + 10,
    type: 'image/png',
    sha256: null,
    chunkSize: CHUNK,
    chunkCount: 3,
    received: [],
    missing: [0, 1, 2],
    status: 'open',
    createdBy: 'u1',
    file: null,
    createdAt: '2026-01-01T00:00:00.000Z',
    expiresAt: '2026-01-02T00:00:00.000Z'
  })
  t.type(view.id, 'string')
  t.match(await uploads.start(owner, { name: 'e', size: 0, type: 'text/plain' }), { chunkCount: 0, missing: [] }, 'an empty file has no chunks')

  const good = { name: 'a.bin', size: 10, type: 'application/octet-stream' }
  const refusals: Array<[string, UploadOwner, typeof good & { sha256?: string }, string, number]> = [
    ['a negative size', owner, { ...good, size: -1 }, 'APP_UPLOAD_INVALID', 400],
    ['a fractional size', owner, { ...good, size: 1.5 }, 'APP_UPLOAD_INVALID', 400],
    ['an empty name', owner, { ...good, name: '' }, 'APP_UPLOAD_INVALID', 400],
    ['a control character in the name', owner, { ...good, name: 'a\nb' }, 'APP_UPLOAD_INVALID', 400],
    ['a type that is no media type', owner, { ...good, type: 'png' }, 'APP_UPLOAD_INVALID', 400],
    ['a sha256 that is not hex', owner, { ...good, sha256: 'z'.repeat(64) }, 'APP_UPLOAD_INVALID', 400],
    ['a project id that is not an id', { ...owner, projectId: '../etc' }, good, 'APP_UPLOAD_INVALID', 400],
    ['a size over maxSize', owner, { ...good, size: 10 * CHUNK + 1 }, 'APP_FILE_TOO_LARGE', 413]
  ]
  for (const [what, who, input, code, status] of refusals) await t.rejects(uploads.start(who, input), { code, status }, what)

  const { uploads: unbounded } = await setup(t)
  await t.rejects(unbounded.start(owner, { ...good, size: 10_001 * CHUNK }), { code: 'APP_FILE_TOO_LARGE', status: 413 }, 'more chunks than a session may hold')
  t.equal(UPLOADS_EXPIRE_JOB, 'uploads.expire')
})

t.test('chunks in any order, one sent twice, concurrently; complete joins, verifies and cleans up', async (t) => {
  const { uploads, files, stored, attached, attach } = await setup(t)
  const data = randomBytes(4 * CHUNK + 300)
  const parts = pieces(data)
  const session = await uploads.start(owner, { name: 'blob.bin', size: data.length, type: 'application/octet-stream', sha256: sha256(data).toUpperCase() })
  t.equal(session.sha256, sha256(data), 'the declared sha256 is kept in lower case')
  await uploads.putChunk(session.id, owner, 4, parts[4])
  await uploads.putChunk(session.id, owner, 1, streamOf(parts[1], 100))
  await uploads.putChunk(session.id, owner, 1, randomBytes(CHUNK))
  const again = await uploads.putChunk(session.id, owner, 1, parts[1])
  t.same(again.received, [1, 4], 'a repeated index is counted once')
  t.same(again.missing, [0, 2, 3])
  await Promise.all([0, 2, 3].map(async (i) => await uploads.putChunk(session.id, owner, i, parts[i])))
  t.same((await uploads.status(session.id, owner)).received, [0, 1, 2, 3, 4], 'concurrent chunk PUTs all recorded')

  const file = await uploads.complete(session.id, owner, attach)
  t.match(file, { name: 'blob.bin', size: data.length, sha256: sha256(data), type: 'application/octet-stream', declaredType: 'application/octet-stream' })
  t.same(attached, [file], 'attach got the file')
  const opened = await uploads.openFile(owner, file.id)
  t.equal(opened.size, data.length)
  t.ok((await collect(opened.stream)).equals(data), 'the last resend of chunk 1 won')
  const ranged = await uploads.openFile(owner, file.id, { start: 10, end: 19 })
  t.ok((await collect(ranged.stream)).equals(data.subarray(10, 20)))
  t.same((await stored('uploads')).staged, [], 'chunks are gone')
  t.match(await uploads.status(session.id, owner), { status: 'completed', file })
  t.equal(await files.stat(`files/p1/${owner.table}/${owner.recordId}/${owner.field}/${file.id}`).then((s) => s?.size), data.length)

  t.same(await uploads.complete(session.id, owner, attach), file, 'complete again: the same file')
  t.equal(attached.length, 1, 'without attaching twice')
  await t.rejects(uploads.putChunk(session.id, owner, 0, parts[0]), { code: 'APP_UPLOAD_NOT_OPEN', status: 409 })
  await t.rejects(uploads.abort(session.id, owner), { code: 'APP_UPLOAD_NOT_OPEN', status: 409 })

  await uploads.deleteFile(owner, file.id)
  await uploads.deleteFile(owner, file.id)
  await t.rejects(uploads.openFile(owner, file.id), { code: 'APP_FILE_NOT_FOUND', status: 404 })
  await t.rejects(uploads.openFile(owner, '../x'), { code: 'APP_FILE_NOT_FOUND', status: 404 })
})

t.test('a dropped client resumes from status', async (t) => {
  const { uploads, attach } = await setup(t)
  const data = randomBytes(5 * CHUNK)
  const parts = pieces(data)
  const session = await uploads.start(owner, { name: 'r.bin', size: data.length, type: 'application/octet-stream' })
  await uploads.putChunk(session.id, owner, 0, parts[0])
  await uploads.putChunk(session.id, owner, 3, parts[3])
  await t.rejects(uploads.putChunk(session.id, owner, 1, failingStream(parts[1].subarray(0, 500))), { message: 'connection reset' })
  const view = await uploads.status(session.id, owner)
  t.same(view.received, [0, 3], 'the interrupted chunk does not count')
  t.same(view.missing, [1, 2, 4])
  for (const i of view.missing) await uploads.putChunk(session.id, owner, i, Readable.from([parts[i]]))
  const file = await uploads.complete(session.id, owner, attach)
  t.ok((await collect((await uploads.openFile(owner, file.id)).stream)).equals(data))
})

t.test('chunk sizes and indexes are checked; a bad resend keeps the good chunk', async (t) => {
  const { uploads, attach } = await setup(t)
  const data = randomBytes(2 * CHUNK + 100)
  const parts = pieces(data)
  const session = await uploads.start(owner, { name: 'c.bin', size: data.length, type: 'application/octet-stream' })
  const bad: Array<[string, number, Buffer | Readable]> = [
    ['a short chunk', 0, randomBytes(CHUNK - 1)],
    ['a long chunk', 0, randomBytes(CHUNK + 1)],
    ['a long streamed chunk', 1, streamOf(randomBytes(CHUNK + 1), 300)],
    ['a short streamed chunk', 1, streamOf(randomBytes(CHUNK - 1), 300)],
    ['a full-size last chunk', 2, randomBytes(CHUNK)],
    ['a short last chunk', 2, randomBytes(99)],
    ['an index past the end', 3, randomBytes(CHUNK)],
    ['a negative index', -1, randomBytes(CHUNK)],
    ['a fractional index', 0.5, randomBytes(CHUNK)]
  ]
  for (const [what, index, body] of bad) {
    await t.rejects(uploads.putChunk(session.id, owner, index, body), { code: 'APP_INVALID_CHUNK', status: 400 }, what)
  }
  t.same((await uploads.status(session.id, owner)).received, [], 'nothing was recorded')
  for (const [i, part] of parts.entries()) await uploads.putChunk(session.id, owner, i, part)
  await t.rejects(uploads.putChunk(session.id, owner, 1, streamOf(randomBytes(CHUNK + 5), 200)), { code: 'APP_INVALID_CHUNK' })
  const file = await uploads.complete(session.id, owner, attach)
  t.equal(file.sha256, sha256(data), 'the refused resend did not replace the stored chunk')
})

t.test('sessions belong to their owner', async (t) => {
  const { uploads, attach } = await setup(t)
  const session = await uploads.start(owner, { name: 'o.bin', size: 10, type: 'application/octet-stream' })
  const notFound = { code: 'APP_UPLOAD_SESSION_NOT_FOUND', status: 404 }
  for (const other of [{ ...owner, projectId: 'p2' }, { ...owner, table: 't2' }, { ...owner, recordId: 'r2' }, { ...owner, field: 'f2' }]) {
    await t.rejects(uploads.status(session.id, other), notFound, `status for ${JSON.stringify(other)}`)
    await t.rejects(uploads.putChunk(session.id, other, 0, randomBytes(10)), notFound)
    await t.rejects(uploads.complete(session.id, other, attach), notFound)
    await t.rejects(uploads.abort(session.id, other), notFound)
  }
  await t.rejects(uploads.status('nope', owner), notFound)
  await t.rejects(uploads.status('../../etc', owner), notFound)
})

t.test('complete refuses a missing chunk, a wrong size and a wrong checksum, and stays completable', async (t) => {
  const { uploads, stored, attach, files } = await setup(t)
  const data = randomBytes(3 * CHUNK)
  const parts = pieces(data)

  const incomplete = await uploads.start(owner, { name: 'i.bin', size: data.length, type: 'application/octet-stream' })
  await uploads.putChunk(incomplete.id, owner, 1, parts[1])
  await t.rejects(uploads.complete(incomplete.id, owner, attach), { code: 'APP_UPLOAD_INCOMPLETE', status: 409, details: { missing: [0, 2] } })

  const wrongSum = await uploads.start(owner, { name: 's.bin', size: data.length, type: 'application/octet-stream', sha256: sha256(randomBytes(8)) })
  for (const [i, part] of parts.entries()) await uploads.putChunk(wrongSum.id, owner, i, part)
  await t.rejects(uploads.complete(wrongSum.id, owner, attach), { code: 'APP_UPLOAD_CHECKSUM_MISMATCH', status: 422, details: { actual: sha256(data) } })
  t.same((await stored('files')).objects, [], 'no final object is left')
  t.match(await uploads.status(wrongSum.id, owner), { status: 'open', received: [0, 1, 2] }, 'still open')

  // Chunks are sized on arrival, so only a chunk changed behind the service's back can make the total wrong.
  const tampered = await uploads.start(owner, { name: 't.bin', size: data.length, type: 'application/octet-stream', sha256: sha256(data) })
  for (const [i, part] of parts.entries()) await uploads.putChunk(tampered.id, owner, i, part)
  if (files instanceof LocalFileStore) truncateSync(join(files.root, 'uploads', `${tampered.id}.part`), 2 * CHUNK + 10)
  else await files.writePart(`uploads/${tampered.id}`, 2 * CHUNK, parts[2].subarray(0, 10))
  await t.rejects(uploads.complete(tampered.id, owner, attach), { code: 'APP_UPLOAD_SIZE_MISMATCH', status: 422, details: { expected: data.length, actual: 2 * CHUNK + 10 } })
  t.same((await stored('files')).objects, [])
  await uploads.putChunk(tampered.id, owner, 2, parts[2])
  t.equal((await uploads.complete(tampered.id, owner, attach)).sha256, sha256(data), 'resending the chunk repairs it')
})

t.test('a chunk being rewritten counts as missing, so complete never seals under a write', async (t) => {
  const { uploads, files, attach } = await setup(t)
  const data = randomBytes(2 * CHUNK)
  const parts = pieces(data)
  const session = await uploads.start(owner, { name: 'r.bin', size: data.length, type: 'application/octet-stream', sha256: sha256(data) })
  for (const [i, part] of parts.entries()) await uploads.putChunk(session.id, owner, i, part)

  await t.rejects(uploads.putChunk(session.id, owner, 0, failingStream(parts[0].subarray(0, 100))), { message: 'connection reset' })
  t.match(await uploads.status(session.id, owner), { received: [0, 1], missing: [] }, 'a rewrite that broke off leaves the chunk as it was')

  let release = (): void => {}
  const gate = new Promise<void>((resolve) => { release = resolve })
  const writePart = files.writePart.bind(files)
  files.writePart = async (key, offset, body) => { await gate; await writePart(key, offset, body) }
  const rewrite = uploads.putChunk(session.id, owner, 1, parts[1])
  await new Promise((resolve) => setTimeout(resolve, 20))
  await t.rejects(uploads.complete(session.id, owner, attach), { code: 'APP_UPLOAD_INCOMPLETE', details: { missing: [1] } }, 'the chunk under rewrite is missing meanwhile')
  release()
  t.match(await rewrite, { missing: [] })
  t.equal((await uploads.complete(session.id, owner, attach)).sha256, sha256(data))
})

t.test('two sends of one chunk at once: complete waits for both, and the file is what is on disk', async (t) => {
  const { uploads, files, store, clock, attach } = await setup(t)
  const data = randomBytes(2 * CHUNK)
  const parts = pieces(data)
  const session = await uploads.start(owner, { name: 'r.bin', size: data.length, type: 'application/octet-stream' })
  await uploads.putChunk(session.id, owner, 0, parts[0])
  const other = randomBytes(CHUNK)
  let release = (): void => {}
  const gate = new Promise<void>((resolve) => { release = resolve })
  const writePart = files.writePart.bind(files)
  let held = false
  files.writePart = async (key, offset, body) => {
    if (!held && body === other) { held = true; await gate }
    await writePart(key, offset, body)
  }
  const slow = uploads.putChunk(session.id, owner, 1, other)
  await new Promise((resolve) => setTimeout(resolve, 20))
  await uploads.putChunk(session.id, owner, 1, parts[1])
  t.match(await uploads.status(session.id, owner), { missing: [] }, 'the faster send landed')
  await t.rejects(uploads.complete(session.id, owner, attach), { code: 'APP_UPLOAD_CHUNK_IN_FLIGHT', status: 409 }, 'not while the other is still writing')
  release()
  await slow
  const file = await uploads.complete(session.id, owner, attach)
  t.equal(file.sha256, sha256(Buffer.concat([parts[0], other])), 'the last write wins, and the recorded sha256 is of those bytes')

  // A writer that died holds completers off only until its lease runs out.
  const stuck = await uploads.start(owner, { name: 's.bin', size: data.length, type: 'application/octet-stream' })
  for (const [i, part] of parts.entries()) await uploads.putChunk(stuck.id, owner, i, part)
  await store.collection(UPLOAD_SESSIONS_COLLECTION).updateOne({ _id: stuck.id }, { $inc: { writers: 1 }, $set: { writersUntil: new Date(clock.nowMs() + 15 * 60_000) } })
  await t.rejects(uploads.complete(stuck.id, owner, attach), { code: 'APP_UPLOAD_CHUNK_IN_FLIGHT' })
  clock.advance(15 * 60_000 + 1)
  t.equal((await uploads.complete(stuck.id, owner, attach)).sha256, sha256(data), 'completable once the lease lapsed')
})

t.test('complete trusts the digest taken on arrival only when it saw every chunk write', async (t) => {
  const { uploads, files, store, clock, attach } = await setup(t)
  const data = randomBytes(3 * CHUNK)
  const parts = pieces(data)
  const sealedWith: Array<string | undefined> = []
  const seal = files.seal.bind(files)
  files.seal = async (key, target, sha256) => { sealedWith.push(sha256); return await seal(key, target, sha256) }

  const inOrder = await uploads.start(owner, { name: 'a.bin', size: data.length, type: 'application/octet-stream', sha256: sha256(data) })
  for (const i of [2, 0, 1]) await uploads.putChunk(inOrder.id, owner, i, parts[i])
  t.equal((await uploads.complete(inOrder.id, owner, attach)).sha256, sha256(data))
  t.same(sealedWith, [sha256(data)], 'hashed as the chunks came, so the bytes were not read back')

  // A second process on the same store and files rewrites a chunk this one already hashed.
  const other = new UploadSessions(store, files, { clock, newId: createIdGenerator(() => clock.nowMs()), chunkSize: CHUNK })
  const changed = Buffer.concat([parts[0], randomBytes(CHUNK), parts[2]])
  const shared = await uploads.start(owner, { name: 'b.bin', size: data.length, type: 'application/octet-stream' })
  for (const [i, part] of parts.entries()) await uploads.putChunk(shared.id, owner, i, part)
  await other.putChunk(shared.id, owner, 1, changed.subarray(CHUNK, 2 * CHUNK))
  t.equal((await uploads.complete(shared.id, owner, attach)).sha256, sha256(changed), 'the file as it is on disk')
  t.equal(sealedWith[1], undefined, 'a write this process did not see: the staged bytes are hashed')
})

t.test('the type is sniffed from the bytes, not taken from the client', async (t) => {
  const { uploads, attach } = await setup(t)
  const text = Buffer.from('just some words, not a picture\n')
  const session = await uploads.start(owner, { name: 'fake.png', size: text.length, type: 'image/png' })
  await uploads.putChunk(session.id, owner, 0, text)
  t.match(await uploads.complete(session.id, owner, attach), { type: 'text/plain', declaredType: 'image/png' })

  const png = Buffer.concat([Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex'), randomBytes(2 * CHUNK)])
  const real = await uploads.start(owner, { name: 'x', size: png.length, type: 'application/octet-stream' })
  for (const [i, part] of pieces(png).entries()) await uploads.putChunk(real.id, owner, i, part)
  t.match(await uploads.complete(real.id, owner, attach), { type: 'image/png', declaredType: 'application/octet-stream' })
})

t.test('a failing attach leaves no object and the session completable', async (t) => {
  const { uploads, stored } = await setup(t)
  const data = randomBytes(2 * CHUNK)
  const session = await uploads.start(owner, { name: 'a.bin', size: data.length, type: 'application/octet-stream' })
  for (const [i, part] of pieces(data).entries()) await uploads.putChunk(session.id, owner, i, part)
  const offered: StoredFile[] = []
  await t.rejects(uploads.complete(session.id, owner, async (file) => {
    offered.push(file)
    throw new Error('record was deleted meanwhile')
  }), { message: 'record was deleted meanwhile' })
  t.same((await stored('files')).objects, [], 'the final object was removed')
  t.match(await uploads.status(session.id, owner), { status: 'open', missing: [] })
  t.same((await stored('uploads')).staged, [`uploads/${session.id}`], 'the staged chunks are kept for another try')
  const file = await uploads.complete(session.id, owner, async (f) => { offered.push(f) })
  t.equal(file.id, offered[0].id, 'the retry makes the same file id')
  t.equal(file.sha256, sha256(data))
})

t.test('only one completer at a time; a dead completer lapses', async (t) => {
  const { uploads, store, clock } = await setup(t)
  const data = randomBytes(3 * CHUNK)
  const session = await uploads.start(owner, { name: 'c.bin', size: data.length, type: 'application/octet-stream' })
  for (const [i, part] of pieces(data).entries()) await uploads.putChunk(session.id, owner, i, part)
  let calls = 0
  const results = await Promise.allSettled([1, 2].map(async () => await uploads.complete(session.id, owner, async () => { calls++ })))
  t.equal(calls, 1, 'attached once')
  const fulfilled = results.filter((r) => r.status === 'fulfilled')
  t.ok(fulfilled.length >= 1)
  for (const result of results) {
    if (result.status === 'rejected') t.match(result.reason, { code: 'APP_UPLOAD_COMPLETING', status: 409 })
  }

  const stuck = await uploads.start(owner, { name: 'd.bin', size: data.length, type: 'application/octet-stream' })
  for (const [i, part] of pieces(data).entries()) await uploads.putChunk(stuck.id, owner, i, part)
  await store.collection(UPLOAD_SESSIONS_COLLECTION).updateOne({ _id: stuck.id }, {
    $set: { status: 'completing', completer: 'crashed', completingUntil: new Date(clock.nowMs() + 15 * 60_000) }
  })
  await t.rejects(uploads.complete(stuck.id, owner, async () => {}), { code: 'APP_UPLOAD_COMPLETING' })
  await t.rejects(uploads.putChunk(stuck.id, owner, 0, pieces(data)[0]), { code: 'APP_UPLOAD_NOT_OPEN', status: 409 })
  clock.advance(15 * 60_000 + 1)
  t.equal((await uploads.complete(stuck.id, owner, async () => {})).sha256, sha256(data), 'taken over after the lease')
})

t.test('abort drops the bytes; a chunk that lands after the abort is dropped too', async (t) => {
  const { uploads, stored, attach } = await setup(t)
  const data = randomBytes(3 * CHUNK)
  const parts = pieces(data)
  const session = await uploads.start(owner, { name: 'x.bin', size: data.length, type: 'application/octet-stream' })
  await uploads.putChunk(session.id, owner, 0, parts[0])
  // The abort happens while chunk 1's bytes are still arriving.
  const late = Readable.from((async function * () {
    yield parts[1].subarray(0, 100)
    await uploads.abort(session.id, owner)
    yield parts[1].subarray(100)
  })(), { objectMode: false })
  await t.rejects(uploads.putChunk(session.id, owner, 1, late), { code: 'APP_UPLOAD_SESSION_ABORTED', status: 410 })
  t.same((await stored('uploads')).staged, [], 'no chunk survives the abort')
  t.match(await uploads.status(session.id, owner), { status: 'aborted' })
  t.match(await uploads.abort(session.id, owner), { status: 'aborted' }, 'aborting again is fine')
  await t.rejects(uploads.putChunk(session.id, owner, 2, parts[2]), { code: 'APP_UPLOAD_SESSION_ABORTED', status: 410 })
  await t.rejects(uploads.complete(session.id, owner, attach), { code: 'APP_UPLOAD_SESSION_ABORTED', status: 410 })
})

t.test('expiry: refused at once, bytes removed by the sweep, documents purged later', async (t) => {
  const { uploads, clock, stored, attach } = await setup(t, { ttlSeconds: 3600 })
  const data = randomBytes(2 * CHUNK)
  const parts = pieces(data)
  const old = await uploads.start(owner, { name: 'old.bin', size: data.length, type: 'application/octet-stream' })
  await uploads.putChunk(old.id, owner, 0, parts[0])
  await uploads.putChunk(old.id, owner, 1, parts[1])
  clock.advance(HOUR / 2)
  const young = await uploads.start(owner, { name: 'young.bin', size: data.length, type: 'application/octet-stream' })
  await uploads.putChunk(young.id, owner, 0, parts[0])

  clock.advance(HOUR / 2)
  const gone = { code: 'APP_UPLOAD_SESSION_EXPIRED', status: 410 }
  await t.rejects(uploads.putChunk(old.id, owner, 0, parts[0]), gone, 'no chunk after expiresAt, even before the sweep')
  await t.rejects(uploads.complete(old.id, owner, attach), gone)
  t.match(await uploads.status(old.id, owner), { status: 'expired' })
  t.same(await uploads.expireDue(), { expired: 1, purged: 0 })
  t.same((await stored('uploads')).staged, [`uploads/${young.id}`], 'only the live session keeps bytes')
  t.same(await uploads.expireDue(), { expired: 0, purged: 0 }, 'the sweep is idempotent')
  t.match(await uploads.status(young.id, owner), { status: 'open', received: [0] })

  clock.advance(8 * 24 * HOUR)
  t.same(await uploads.expireDue(), { expired: 1, purged: 2 }, 'the young session expires, then both are purged')
  await t.rejects(uploads.status(old.id, owner), { code: 'APP_UPLOAD_SESSION_NOT_FOUND' }, 'purged long after expiry')
  t.same((await stored('uploads')).staged, [])
})

t.test('a 20 MB file in streamed chunks', async (t) => {
  const { uploads, attach } = await setup(t, { chunkSize: 1024 * 1024 })
  const data = randomBytes(20 * 1024 * 1024 + 12_345)
  const session = await uploads.start(owner, { name: 'big.bin', size: data.length, type: 'application/octet-stream', sha256: sha256(data) })
  t.equal(session.chunkCount, 21)
  const order = [...Array(21).keys()].reverse()
  for (const i of order) await uploads.putChunk(session.id, owner, i, streamOf(data.subarray(i * 1024 * 1024, (i + 1) * 1024 * 1024), 64 * 1024))
  const file = await uploads.complete(session.id, owner, attach)
  t.same({ size: file.size, sha256: file.sha256 }, { size: data.length, sha256: sha256(data) })
  const hash = createHash('sha256')
  for await (const chunk of (await uploads.openFile(owner, file.id)).stream) hash.update(chunk as Buffer)
  t.equal(hash.digest('hex'), sha256(data), 'read back byte for byte')
})

t.test('storeWhole streams one request to a file', async (t) => {
  const { uploads, stored } = await setup(t, { maxSize: 50_000 })
  const gif = Buffer.concat([Buffer.from('GIF89a'), randomBytes(5000)])
  const file = await uploads.storeWhole(owner, { name: 'a.gif', type: 'image/jpeg', body: streamOf(gif, 999), maxSize: 10_000 })
  t.match(file, { name: 'a.gif', size: gif.length, sha256: sha256(gif), type: 'image/gif', declaredType: 'image/jpeg' })
  t.ok((await collect((await uploads.openFile(owner, file.id)).stream)).equals(gif))

  await t.rejects(uploads.storeWhole(owner, { name: 'b', type: 'text/plain', body: streamOf(randomBytes(10_001), 999), maxSize: 10_000 }), { code: 'APP_FILE_TOO_LARGE', status: 413 })
  await t.rejects(uploads.storeWhole(owner, { name: 'b', type: 'text/plain', body: streamOf(randomBytes(50_001), 999), maxSize: 100_000 }), { code: 'APP_FILE_TOO_LARGE', status: 413 }, "the service's own maxSize still applies")
  await t.rejects(uploads.storeWhole(owner, { name: 'c', type: 'text/plain', body: streamOf(gif), maxSize: 10_000, sha256: sha256(randomBytes(3)) }), { code: 'APP_UPLOAD_CHECKSUM_MISMATCH', status: 422 })
  await t.rejects(uploads.storeWhole(owner, { name: 'd', type: 'bad', body: streamOf(gif), maxSize: 10_000 }), { code: 'APP_UPLOAD_INVALID' })
  t.same((await stored('files')).objects, [`files/p1/${owner.table}/${owner.recordId}/${owner.field}/${file.id}`], 'refused uploads left nothing behind')
  t.match(await uploads.storeWhole(owner, { name: 'e', type: 'text/plain', body: Readable.from([]), maxSize: 10 }), { size: 0, type: 'application/octet-stream' })
})
