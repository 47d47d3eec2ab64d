import { Readable } from 'node:stream'
import type { Clock } from '../platform/clock.js'
import { fieldIssue } from '../platform/errors.js'
import { fileErrors } from './errors.js'
import type { IdGenerator } from '../platform/ids.js'
import type { Store, StoreCollection } from '../store/types.js'
import { ChunkDigests } from './chunk-digests.js'
import { fileNotFound, isValidKeySegment, type ByteRange, type FileStore, type ObjectInfo } from './file-store.js'
import { SNIFF_BYTES, sniffType } from './sniff.js'
import { MAX_CHUNKS } from '../../schemas/files.js'
import { isoString } from '../platform/iso-dates.js'
import {
  bounded, checkName, checkProjectId, checkSha256, chunkInFlight, completing, fileKey, fileOfKey, invalid, invalidChunk, ownerFolder,
  normalizeType, readAll, sessionNotFound, stagedKey, toView, tooLarge, writing, type Session, type SessionRecord, type StartUpload,
  type StoredFile, type UploadOwner, type UploadSessionView
} from './upload-session.js'

export { typeAllowed } from './sniff.js'
export { fileKey, ownerFolder, type StartUpload, type StoredFile, type UploadOwner, type UploadSessionView, type UploadStatus } from './upload-session.js'

/**
 * Resumable uploads: start → chunks in any order, each staged at
 * its offset → complete, which seals the staged bytes into the final object
 * while hashing, verifies size and checksum, sniffs the type and lets the
 * caller attach the file. Until then nothing is a visible file, and a session
 * that is never completed expires and loses its bytes.
 */

export const UPLOAD_SESSIONS_COLLECTION = 'upload_sessions'
/** The job type whose handler calls `expireDue()`. */
export const UPLOADS_EXPIRE_JOB = 'uploads.expire'
export const DEFAULT_CHUNK_SIZE = 8 * 1024 * 1024
export const DEFAULT_UPLOAD_TTL_SECONDS = 24 * 60 * 60
// A completer that dies mid-way loses its claim after this long and another request may complete.
const COMPLETE_LEASE_MS = 15 * 60_000
// Likewise a chunk writer that dies: its unfinished write stops holding off completers.
const WRITE_LEASE_MS = 15 * 60_000
// Finished sessions are kept this long past expiry so a late retry of complete still gets its file.
const RETENTION_MS = 7 * 24 * 60 * 60_000
const SWEEP_BATCH = 200

export interface UploadSessionsDeps {
  clock: Clock
  newId: IdGenerator
  chunkSize?: number
  ttlSeconds?: number
  maxSize?: number
}

export class UploadSessions {
  private readonly sessions: StoreCollection<SessionRecord>
  private readonly chunkSize: number
  private readonly ttlMs: number
  private readonly maxSize: number
  private readonly digests = new ChunkDigests()

  constructor (store: Store, private readonly files: FileStore, private readonly deps: UploadSessionsDeps) {
    this.sessions = store.collection<SessionRecord>(UPLOAD_SESSIONS_COLLECTION)
    this.chunkSize = deps.chunkSize ?? DEFAULT_CHUNK_SIZE
    if (!Number.isSafeInteger(this.chunkSize) || this.chunkSize < 1) throw new RangeError('chunkSize must be a whole number of bytes')
    this.ttlMs = (deps.ttlSeconds ?? DEFAULT_UPLOAD_TTL_SECONDS) * 1000
    if (!(this.ttlMs > 0)) throw new RangeError('ttlSeconds must be positive')
    this.maxSize = deps.maxSize ?? Number.MAX_SAFE_INTEGER
  }

  async init (): Promise<void> {
    await this.sessions.createIndex({ status: 1, expiresAt: 1 })
  }

  async start (owner: UploadOwner, input: StartUpload): Promise<UploadSessionView> {
    checkProjectId(owner.projectId)
    const size = input.size
    if (!Number.isSafeInteger(size) || size < 0) throw invalid('size must be a whole number of bytes')
    if (size > this.maxSize) throw tooLarge(this.maxSize)
    const chunkCount = Math.ceil(size / this.chunkSize)
    if (chunkCount > MAX_CHUNKS) throw tooLarge(MAX_CHUNKS * this.chunkSize)
    const now = this.deps.clock.now()
    const session: Session = {
      _id: this.deps.newId(),
      projectId: owner.projectId,
      table: owner.table,
      recordId: owner.recordId,
      field: owner.field,
      fileId: this.deps.newId(),
      name: checkName(input.name),
      size,
      type: normalizeType(input.type),
      sha256: checkSha256(input.sha256),
      chunkSize: this.chunkSize,
      chunkCount,
      received: [],
      writes: 0,
      writers: 0,
      writersUntil: null,
      status: 'open',
      completer: null,
      completingUntil: null,
      file: null,
      expiresAt: new Date(now.getTime() + this.ttlMs),
      createdAt: now,
      updatedAt: now,
      createdBy: input.createdBy ?? null
    }
    await this.sessions.insertOne(session)
    return toView(session, now)
  }

  /** Resume point for a client: which chunks arrived and which are still missing. */
  async status (sessionId: string, owner: UploadOwner): Promise<UploadSessionView> {
    return toView(await this.load(sessionId, owner), this.deps.clock.now())
  }

  /**
   * Stores chunk `index`; sending an index again replaces it. The index
   * leaves `received` and the session counts a writer while the bytes go
   * down; a completer claims only a session with every chunk received and no
   * writer, so it never seals under a write, in this process or another.
   */
  async putChunk (sessionId: string, owner: UploadOwner, index: number, body: Buffer | Readable): Promise<UploadSessionView> {
    const session = await this.load(sessionId, owner)
    this.assertOpen(session)
    if (!Number.isSafeInteger(index) || index < 0 || index >= session.chunkCount) {
      throw invalidChunk(`Chunk index must be between 0 and ${session.chunkCount - 1}`, fieldIssue('index', `must be between 0 and ${session.chunkCount - 1}`))
    }
    const expected = index === session.chunkCount - 1 ? session.size - index * session.chunkSize : session.chunkSize
    if (Buffer.isBuffer(body) && body.length !== expected) {
      throw invalidChunk(`The chunk must be exactly ${expected} bytes; got ${body.length}`, { expected, actual: body.length })
    }
    // Whole before it touches the staged bytes: a stream that breaks off must not leave half a chunk over a good one.
    const tooLong = (): Error => invalidChunk(`The chunk must be exactly ${expected} bytes`, { expected })
    const bytes = Buffer.isBuffer(body) ? body : await readAll(Readable.from(bounded(body, { max: expected, exact: true, onTooLong: tooLong })))
    const started = this.deps.clock.now()
    const writable = await this.sessions.updateOne(
      { _id: session._id, status: 'open', expiresAt: { $gt: started } },
      { $pull: { received: index }, $inc: { writers: 1 }, $set: { writersUntil: new Date(started.getTime() + WRITE_LEASE_MS) } }
    )
    if (writable.matchedCount === 0) {
      await this.settleLateChunk(session._id, true)
      throw completing()
    }
    const key = stagedKey(session._id)
    // Hashed while the bytes go to disk; a write that fails takes the running digest with it.
    const hashed = this.digests.add(session._id, index, bytes, session.writes)
    try {
      await this.files.writePart(key, index * session.chunkSize, bytes)
    } catch (error) {
      this.digests.forget(session._id)
      await hashed
      await this.releaseWriter(session._id)
      // An abort or the sweep may have removed the staged bytes under the write: report that, not the I/O error.
      await this.settleLateChunk(session._id, false)
      throw error
    }
    const now = this.deps.clock.now()
    const updated = await this.sessions.findOneAndUpdate(
      { _id: session._id, status: 'open', expiresAt: { $gt: now } },
      { $addToSet: { received: index }, $inc: { writes: 1, writers: -1 }, $set: { updatedAt: now } },
      { returnDocument: 'after' }
    )
    await hashed
    if (updated !== null) return toView(updated, now)
    await this.releaseWriter(session._id)
    await this.settleLateChunk(session._id, true)
    throw sessionNotFound()
  }

  /**
   * Seals the chunks into the final file and hands it to `attach`, which must
   * throw only when it did not attach. If anything fails, the final object is
   * removed and the session stays completable; once completed, calling again
   * returns the same file.
   */
  async complete (sessionId: string, owner: UploadOwner, attach: (file: StoredFile) => Promise<void>): Promise<StoredFile> {
    const session = await this.load(sessionId, owner)
    if (session.status === 'completed' && session.file !== null) return session.file
    const now = this.deps.clock.now()
    this.assertLive(session, now)
    if (session.status === 'completing' && session.completingUntil !== null && session.completingUntil > now) throw completing()
    const missing = toView(session, now).missing
    if (missing.length > 0) throw fileErrors.uploadIncomplete({ missing })
    if (writing(session, now)) throw chunkInFlight()

    const completer = this.deps.newId()
    const claimed = await this.sessions.findOneAndUpdate(
      {
        _id: session._id,
        received: { $size: session.chunkCount },
        expiresAt: { $gt: now },
        $and: [
          { $or: [{ status: 'open' }, { status: 'completing', completingUntil: { $lt: now } }] },
          { $or: [{ writers: { $lte: 0 } }, { writersUntil: { $lt: now } }] }
        ]
      },
      { $set: { status: 'completing', completer, completingUntil: new Date(now.getTime() + COMPLETE_LEASE_MS), updatedAt: now } },
      { returnDocument: 'after' }
    )
    if (claimed === null) {
      const current = await this.load(sessionId, owner)
      if (current.status === 'completed' && current.file !== null) return current.file
      this.assertLive(current, this.deps.clock.now())
      if (current.status === 'open' && writing(current, this.deps.clock.now())) throw chunkInFlight()
      throw completing()
    }

    const key = fileKey(session, session.fileId)
    if (key === null) throw sessionNotFound()
    let file: StoredFile
    try {
      const known = await this.digests.take(session._id, session.chunkCount, claimed.writes)
      const info = await this.files.seal(stagedKey(session._id), key, known ?? undefined)
      // Every chunk was checked on arrival, so this guards against chunks changed behind the service's back.
      if (info.size !== session.size) {
        throw fileErrors.uploadSizeMismatch({ expected: session.size, actual: info.size })
      }
      if (session.sha256 !== null && info.sha256 !== session.sha256) {
        throw fileErrors.uploadChecksumMismatch({ expected: session.sha256, actual: info.sha256 })
      }
      const head = await readAll(await this.files.read(key, { start: 0, end: SNIFF_BYTES - 1 }))
      file = {
        id: session.fileId,
        name: session.name,
        size: info.size,
        type: sniffType(head, { complete: info.size <= SNIFF_BYTES }),
        declaredType: session.type,
        sha256: info.sha256,
        createdAt: isoString(this.deps.clock.now())
      }
      await attach(file)
    } catch (error) {
      await this.undoComplete(session._id, completer, key)
      throw error
    }
    await this.sessions.updateOne(
      { _id: session._id, status: 'completing', completer },
      { $set: { status: 'completed', file, completer: null, completingUntil: null, updatedAt: this.deps.clock.now() } }
    )
    // Failing to drop the staged bytes does not undo a completed upload; the sweep retries when it purges the session.
    await this.files.deletePrefix(stagedKey(session._id)).catch(() => {})
    return file
  }

  /** Ends an upload and drops its bytes; aborting twice is fine, aborting a completed upload is refused. */
  async abort (sessionId: string, owner: UploadOwner): Promise<UploadSessionView> {
    const session = await this.load(sessionId, owner)
    const now = this.deps.clock.now()
    if (session.status === 'aborted' || session.status === 'expired') return toView(session, now)
    if (session.status === 'completed') throw fileErrors.uploadNotOpen({ status: 'completed' })
    if (session.status === 'completing' && session.completingUntil !== null && session.completingUntil > now) throw completing()
    const aborted = await this.sessions.findOneAndUpdate(
      { _id: session._id, status: session.status, completer: session.completer },
      { $set: { status: 'aborted', completer: null, completingUntil: null, updatedAt: now } },
      { returnDocument: 'after' }
    )
    if (aborted === null) throw completing()
    this.digests.forget(session._id)
    await this.files.deletePrefix(stagedKey(session._id))
    return toView(aborted, now)
  }

  /**
   * Marks sessions past their expiry as expired and deletes their chunks, then
   * forgets finished sessions long past it. A completer that died mid-way may
   * have attached its file already, so its final object is left alone.
   */
  async expireDue (): Promise<{ expired: number, purged: number }> {
    const now = this.deps.clock.now()
    let expired = 0
    for (;;) {
      const due = await this.sessions.find(
        { expiresAt: { $lte: now }, $or: [{ status: 'open' }, { status: 'completing', completingUntil: { $lt: now } }] },
        { limit: SWEEP_BATCH }
      ).toArray()
      for (const session of due) {
        const claimed = await this.sessions.updateOne(
          { _id: session._id, status: session.status, completer: session.completer },
          { $set: { status: 'expired', completer: null, completingUntil: null, updatedAt: now } }
        )
        if (claimed.matchedCount === 0) continue
        this.digests.forget(session._id)
        await this.files.deletePrefix(stagedKey(session._id))
        expired++
      }
      if (due.length < SWEEP_BATCH) break
    }
    let purged = 0
    const cutoff = new Date(now.getTime() - RETENTION_MS)
    for (;;) {
      const stale = await this.sessions.find(
        { status: { $in: ['completed', 'aborted', 'expired'] }, expiresAt: { $lt: cutoff } },
        { limit: SWEEP_BATCH, projection: { _id: 1 } }
      ).toArray()
      for (const { _id } of stale) {
        this.digests.forget(_id)
        await this.files.deletePrefix(stagedKey(_id))
        purged += (await this.sessions.deleteOne({ _id })).deletedCount
      }
      if (stale.length < SWEEP_BATCH) break
    }
    return { expired, purged }
  }

  /**
   * A small upload in one request (multipart): streamed straight to its final
   * object while hashing, refused with 413 past `maxSize`. The file is not
   * attached; if attaching fails the caller calls deleteFile.
   */
  async storeWhole (owner: UploadOwner, input: { name: string, type: string, body: Readable, maxSize: number, sha256?: string }): Promise<StoredFile> {
    checkProjectId(owner.projectId)
    const name = checkName(input.name)
    const declaredType = normalizeType(input.type)
    const sha256 = checkSha256(input.sha256)
    const maxSize = Math.min(input.maxSize, this.maxSize)
    const fileId = this.deps.newId()
    const key = fileKey(owner, fileId)
    if (key === null) throw invalid('The file\'s owner is not a valid collection, record and field')
    const head: Buffer[] = []
    let info: ObjectInfo
    try {
      info = await this.files.write(key, Readable.from(bounded(input.body, { max: maxSize, onTooLong: () => tooLarge(maxSize), head })))
      if (sha256 !== null && info.sha256 !== sha256) {
        throw fileErrors.uploadChecksumMismatch({ expected: sha256, actual: info.sha256 })
      }
    } catch (error) {
      await this.files.delete(key).catch(() => {})
      throw error
    }
    return {
      id: fileId,
      name,
      size: info.size,
      type: sniffType(Buffer.concat(head), { complete: info.size <= SNIFF_BYTES }),
      declaredType,
      sha256: info.sha256,
      createdAt: isoString(this.deps.clock.now())
    }
  }

  /** Idempotent; only ever the file of this owner. */
  async deleteFile (owner: UploadOwner, fileId: string): Promise<void> {
    const key = fileKey(owner, fileId)
    if (key !== null) await this.files.delete(key)
  }

  /** Every stored file with its owner and when its bytes were written, for the sweep of files no record holds. */
  async * storedFiles (): AsyncGenerator<{ owner: UploadOwner, fileId: string, writtenAt: Date }> {
    for await (const { key, writtenAt } of this.files.list('files')) {
      const file = fileOfKey(key)
      if (file !== null) yield { ...file, writtenAt }
    }
  }

  /** Every file a record holds, or with no record id every file of a collection; idempotent. */
  async deleteOwnerFolder (projectId: string, table: string, recordId?: string): Promise<void> {
    const folder = ownerFolder(projectId, table, recordId)
    if (folder !== null) await this.files.deletePrefix(folder)
  }

  /** The bytes of this owner's file (or a range of them, inclusive) and the size of the whole file; 404 fileErrors.fileNotFound. */
  async openFile (owner: UploadOwner, fileId: string, range?: ByteRange): Promise<{ stream: Readable, size: number }> {
    const key = fileKey(owner, fileId)
    const stat = key === null ? null : await this.files.stat(key)
    if (key === null || stat === null) throw fileNotFound(`${owner.projectId}/${fileId}`)
    return { stream: await this.files.read(key, range), size: stat.size }
  }

  private async load (sessionId: string, owner: UploadOwner): Promise<Session> {
    if (!isValidKeySegment(sessionId)) throw sessionNotFound()
    const session = await this.sessions.findOne({
      _id: sessionId, projectId: owner.projectId, table: owner.table, recordId: owner.recordId, field: owner.field
    })
    if (session === null) throw sessionNotFound()
    return session
  }

  /** Lets go of a chunk write that did not land; whatever became of the session. */
  private async releaseWriter (sessionId: string): Promise<void> {
    await this.sessions.updateOne({ _id: sessionId }, { $inc: { writers: -1 } }).catch(() => {})
  }

  /** Refuses sessions that are gone: expired (even before the sweep marked them) or aborted. */
  private assertLive (session: Session, now: Date): void {
    const lapsed = (session.status === 'open' || session.status === 'completing') && session.expiresAt <= now
    if (session.status === 'expired' || lapsed) throw fileErrors.uploadSessionExpired()
    if (session.status === 'aborted') throw fileErrors.uploadSessionAborted()
  }

  private assertOpen (session: Session): void {
    this.assertLive(session, this.deps.clock.now())
    if (session.status !== 'open') throw fileErrors.uploadNotOpen({ status: session.status })
  }

  /**
   * A chunk whose session stopped being open while its bytes arrived: drop
   * the staged bytes (unless a completer may be reading them) and throw the
   * session's state. With `always` false, returns quietly when still open.
   */
  private async settleLateChunk (sessionId: string, always: boolean): Promise<void> {
    const current = await this.sessions.findOne({ _id: sessionId })
    if (!always && current !== null && current.status === 'open' && current.expiresAt > this.deps.clock.now()) return
    if (current === null || current.status === 'aborted' || current.status === 'expired' || current.status === 'completed') {
      this.digests.forget(sessionId)
      await this.files.deletePrefix(stagedKey(sessionId))
    }
    if (current === null) throw sessionNotFound()
    this.assertOpen(current)
  }

  private async undoComplete (sessionId: string, completer: string, key: string): Promise<void> {
    // Best effort: the caller's error matters more, and a failed release lapses with the lease anyway.
    await this.files.delete(key).catch(() => {})
    await this.sessions.updateOne(
      { _id: sessionId, status: 'completing', completer },
      { $set: { status: 'open', completer: null, completingUntil: null, updatedAt: this.deps.clock.now() } }
    ).catch(() => {})
  }
}
