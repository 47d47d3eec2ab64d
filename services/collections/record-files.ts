import type { Readable } from 'node:stream'
import type { AppError } from '../platform/errors.js'
import { fileErrors } from '../files/errors.js'
import { collectionErrors } from './errors.js'
import type { Clock } from '../platform/clock.js'
import type { Document, Store, StoreCollection, WithId } from '../store/types.js'
import { projectCollectionName } from '../projects/naming.js'
import type { ByteRange } from '../files/file-store.js'
import { typeAllowed, type StoredFile, type UploadOwner, type UploadSessions, type UploadSessionView } from '../files/uploads.js'
import { isValidKeySegment } from '../files/file-store.js'
import type { FieldDefinitionT } from '../../schemas/collections.js'
import { enforceCheck, readDeny, resolveAccess, restrict, type Access, type DataCaller } from './access.js'
import { toApiRecord, type ApiRecord } from './record-fields.js'
import { collectionKey, type WriteGate } from './write-gate.js'
import type { DataCollection } from './records.js'

/** What a file field holds (one, or an array when `multiple`). */
export interface FileDescriptor { id: string, name: string, size: number, type: string, sha256: string, createdAt: string }

export interface FileTarget { projectId: string, table: string, id: string, field: string }

type FileMethod = 'upload' | 'download' | 'fileDelete'

interface Located { field: FieldDefinitionT, records: StoreCollection<Document>, record: WithId<Document>, access: Access, owner: UploadOwner }

const WRITE_ATTEMPTS = 3
/** The job type whose handler calls `sweepOrphans`; it runs whatever the file store's engine. */
export const RECORD_FILES_SWEEP_JOB = 'files.orphans'
/** Files younger than this are never swept: far longer than any upload takes from storing its file to attaching it. */
export const ORPHAN_GRACE_MS = 24 * 60 * 60_000

const descriptorOf = (file: StoredFile): FileDescriptor =>
  ({ id: file.id, name: file.name, size: file.size, type: file.type, sha256: file.sha256, createdAt: file.createdAt })

const SHA256_HEX = /^[0-9a-f]{64}$/

/** Only what the upload routes write: anything else in a file field is not a file. */
function isDescriptor (value: unknown): value is FileDescriptor {
  if (value === null || typeof value !== 'object') return false
  const { id, name, size, type, sha256 } = value as Partial<FileDescriptor>
  return isValidKeySegment(id) && typeof name === 'string' && typeof type === 'string' && Number.isSafeInteger(size) && (size as number) >= 0 &&
    typeof sha256 === 'string' && SHA256_HEX.test(sha256)
}

/** The descriptors a file field of `doc` holds. */
function filesIn (doc: Document, field: string): FileDescriptor[] {
  const value = doc[field]
  if (Array.isArray(value)) return value.filter(isDescriptor)
  return isDescriptor(value) ? [value] : []
}

/** The file ids a field holds, read loosely: the sweep keeps bytes that anything in the field still names. */
function heldIds (doc: Document, field: string): string[] {
  const value = doc[field]
  const idOf = (item: unknown): string | null => item !== null && typeof item === 'object' && typeof (item as { id?: unknown }).id === 'string' ? (item as { id: string }).id : null
  return (Array.isArray(value) ? value : [value]).map(idOf).filter((id) => id !== null)
}

const ownerOf = (target: FileTarget): UploadOwner => ({ projectId: target.projectId, table: target.table, recordId: target.id, field: target.field })

const fileNotFound = (): AppError => fileErrors.fileNotFound({ why: 'The record holds no such file' })
const writeConflict = (): AppError => collectionErrors.writeConflict()

/**
 * Files of records: uploads, downloads and deletions go through
 * the collection's upload, download and fileDelete rules exactly like the
 * other methods, and a file field only ever changes here, with a version bump.
 * The bytes live in the FileStore under `files/<projectId>/<fileId>`.
 */
export class RecordFiles {
  constructor (private readonly store: Store, private readonly uploads: UploadSessions, private readonly deps: {
    clock: Clock
    findCollection: (projectId: string, name: string) => Promise<DataCollection | null>
    /** Applies when a field sets no maxSize. */
    maxSize: number
    /** Called once a session has started, so something sweeps it if it is never completed. */
    sessionStarted?: () => Promise<void>
    /** Orders record writes against definition changes of the same collection. */
    writes: WriteGate
  }) {}

  async startUpload (target: FileTarget, caller: DataCaller, input: { name: string, size: number, type: string, sha256?: string }): Promise<UploadSessionView> {
    const { field, record, owner } = await this.locate(target, 'upload', caller)
    this.checkSize(field, input.size)
    if (field.multiple === true && field.max !== undefined && filesIn(record, field.name).length >= field.max) throw tooMany(field.max)
    const session = await this.uploads.start(owner, { ...input, createdBy: callerId(caller) })
    await this.deps.sessionStarted?.()
    return session
  }

  async uploadStatus (target: FileTarget, caller: DataCaller, sessionId: string): Promise<UploadSessionView> {
    const { owner } = await this.locate(target, 'upload', caller)
    return await this.uploads.status(sessionId, owner)
  }

  async putChunk (target: FileTarget, caller: DataCaller, sessionId: string, index: number, body: Buffer | Readable): Promise<UploadSessionView> {
    const { owner } = await this.locate(target, 'upload', caller)
    return await this.uploads.putChunk(sessionId, owner, index, body)
  }

  async abortUpload (target: FileTarget, caller: DataCaller, sessionId: string): Promise<UploadSessionView> {
    const { owner } = await this.locate(target, 'upload', caller)
    return await this.uploads.abort(sessionId, owner)
  }

  /**
   * Joins the chunks, checks the sniffed type and attaches the file; on any refusal the stored object is gone.
   * Only the attach step holds the collection's write gate: joining and hashing a large file inside it would
   * keep a definition change, and every write queued behind that change, waiting on one client's upload.
   */
  async completeUpload (target: FileTarget, caller: DataCaller, sessionId: string): Promise<{ file: FileDescriptor, record: ApiRecord }> {
    const { owner, access } = await this.locate(target, 'upload', caller)
    const attached: { record?: ApiRecord } = {}
    const file = await this.uploads.complete(sessionId, owner, async (stored) => {
      attached.record = await this.attachStored(target, caller, stored)
    })
    // A retried complete of an attached upload returns the same file and the record as it is now.
    const record = attached.record ?? toApiRecord((await this.locate(target, 'upload', caller)).record, access.deny)
    return { file: descriptorOf(file), record }
  }

  /** A small file in one request, streamed to storage, then attached; `maxSize` caps the field's own limit. */
  async uploadWhole (target: FileTarget, caller: DataCaller, input: { name: string, type: string, body: Readable, maxSize?: number }): Promise<{ file: FileDescriptor, record: ApiRecord }> {
    const { field, owner } = await this.locate(target, 'upload', caller)
    const maxSize = Math.min(field.maxSize ?? this.deps.maxSize, input.maxSize ?? this.deps.maxSize)
    const stored = await this.uploads.storeWhole(owner, { name: input.name, type: input.type, body: input.body, maxSize })
    try {
      return { file: descriptorOf(stored), record: await this.attachStored(target, caller, stored) }
    } catch (error) {
      await this.uploads.deleteFile(owner, stored.id).catch(() => {})
      throw error
    }
  }

  /** Under the write gate, with the record and definition read again: the stored file's sniffed type checked, then attached. */
  private async attachStored (target: FileTarget, caller: DataCaller, stored: StoredFile): Promise<ApiRecord> {
    return await this.deps.writes.write(collectionKey(target.projectId, target.table), async () => {
      const located = await this.locate(target, 'upload', caller)
      this.checkType(located.field, stored.type)
      return await this.attach(target.projectId, located, descriptorOf(stored))
    })
  }

  /** The descriptor of a file the record holds, under the download rule. */
  async download (target: FileTarget, caller: DataCaller, fileId: string): Promise<FileDescriptor> {
    const { field, record } = await this.locate(target, 'download', caller)
    const file = filesIn(record, field.name).find((item) => item.id === fileId)
    if (file === undefined) throw fileNotFound()
    return file
  }

  /** The bytes of a file `download` found, read from the folder of the record and field that hold it. */
  async open (target: FileTarget, fileId: string, range?: ByteRange): Promise<{ stream: Readable, size: number }> {
    return await this.uploads.openFile(ownerOf(target), fileId, range)
  }

  /** Takes the file out of the field, then out of storage. */
  async deleteFile (target: FileTarget, caller: DataCaller, fileId: string): Promise<ApiRecord> {
    return await this.deps.writes.write(collectionKey(target.projectId, target.table), async () => {
      const located = await this.locate(target, 'fileDelete', caller)
      const name = located.field.name
      const record = await this.rewrite(located, (current) => {
        const held = filesIn(current, name)
        if (!held.some((item) => item.id === fileId)) throw fileNotFound()
        return located.field.multiple === true ? held.filter((item) => item.id !== fileId) : null
      })
      await this.uploads.deleteFile(located.owner, fileId)
      return record
    })
  }

  /** For `records.onRemove`: the files of records that were deleted, which live in their records' folders. */
  async removeRecordFiles (projectId: string, collection: Pick<DataCollection, 'name' | 'fields'>, docs: Array<WithId<Document>>): Promise<void> {
    if (!collection.fields.some((field) => field.type === 'file')) return
    for (const doc of docs) await this.uploads.deleteOwnerFolder(projectId, collection.name, doc._id)
  }

  /**
   * For `records.onUpdate`: a record write that cleared file fields (null or
   * [], the only values it may set there) let go of the files they held. A
   * delete that fails leaves bytes no record holds, for sweepOrphans.
   */
  async removeClearedFiles (projectId: string, collection: Pick<DataCollection, 'name' | 'fields'>, changes: Document, before: Array<WithId<Document>>): Promise<void> {
    const cleared = collection.fields.filter((field) => field.type === 'file' && Object.hasOwn(changes, field.name))
    for (const doc of before) {
      for (const field of cleared) {
        const owner = { projectId, table: collection.name, recordId: doc._id, field: field.name }
        for (const file of filesIn(doc, field.name)) await this.uploads.deleteFile(owner, file.id).catch(() => {})
      }
    }
  }

  /**
   * Deletes stored files that no record holds (their record, collection or
   * project gone, or the field no longer naming them), written before
   * `olderThan`: a crash between a record write and the delete of what it
   * let go leaves such bytes, as did record writes before they deleted any.
   * Younger files are left alone, since an upload stores its file before it
   * attaches it to the record.
   */
  async sweepOrphans (olderThan: Date): Promise<number> {
    let removed = 0
    // Files of one record come one after another (both engines list a folder at a time): one read per record.
    let lastKey = ''
    let lastDoc: Document | null = null
    for await (const { owner, fileId, writtenAt } of this.uploads.storedFiles()) {
      if (writtenAt >= olderThan) continue
      const recordKey = `${owner.projectId}/${owner.table}/${owner.recordId}`
      if (recordKey !== lastKey) {
        lastKey = recordKey
        lastDoc = await this.holder(owner)
      }
      if (lastDoc !== null && heldIds(lastDoc, owner.field).includes(fileId)) continue
      await this.uploads.deleteFile(owner, fileId)
      removed++
    }
    return removed
  }

  /** The record a stored file belongs to, if its collection and the record still exist. */
  private async holder (owner: UploadOwner): Promise<Document | null> {
    if (await this.deps.findCollection(owner.projectId, owner.table) === null) return null
    return await this.store.collection(projectCollectionName(owner.projectId, owner.table)).findOne({ _id: owner.recordId })
  }

  /** For `definitions.onDrop`: the files of every record of a collection being dropped. */
  async dropCollectionFiles (projectId: string, name: string): Promise<void> {
    await this.uploads.deleteOwnerFolder(projectId, name)
  }

  private async attach (projectId: string, located: Located, file: FileDescriptor): Promise<ApiRecord> {
    const { field } = located
    let replaced: FileDescriptor[] = []
    const record = await this.rewrite(located, (current) => {
      const held = filesIn(current, field.name)
      if (field.multiple !== true) {
        replaced = held
        return file
      }
      if (field.max !== undefined && held.length >= field.max) throw tooMany(field.max)
      return [...held, file]
    })
    // Only once the record points at the new file may the old one go.
    for (const old of replaced) await this.uploads.deleteFile(located.owner, old.id).catch(() => {})
    return record
  }

  /** Sets the field to what `next` makes of the current record, guarded by its version. */
  private async rewrite (located: Located, next: (current: WithId<Document>) => unknown): Promise<ApiRecord> {
    const { records, access, field } = located
    let current: WithId<Document> | null = located.record
    for (let attempt = 0; attempt < WRITE_ATTEMPTS; attempt++) {
      if (current === null) throw collectionErrors.recordNotFound()
      const version = current.version as number
      const changes = { [field.name]: next(current), updatedAt: this.deps.clock.now(), version: version + 1 }
      const updated = { ...current, ...changes }
      enforceCheck(access, updated)
      const result = await records.updateOne({ _id: current._id, version }, { $set: changes })
      if (result.matchedCount === 1) return toApiRecord(updated, access.deny)
      current = await records.findOne(restrict({ _id: current._id }, access))
    }
    throw writeConflict()
  }

  private async locate (target: FileTarget, method: FileMethod, caller: DataCaller): Promise<Located> {
    const collection = await this.deps.findCollection(target.projectId, target.table)
    if (collection === null) throw collectionErrors.collectionNotFound()
    const access = resolveAccess(method, collection.methods[method], caller, this.deps.clock, readDeny(collection.methods))
    const records = this.store.collection(projectCollectionName(target.projectId, target.table))
    const record = await records.findOne(restrict({ _id: target.id }, access))
    if (record === null) throw collectionErrors.recordNotFound()
    const field = collection.fields.find((item) => item.name === target.field)
    if (field?.type !== 'file') throw collectionErrors.fieldNotFound({ field: target.field })
    return { field, records, record, access, owner: { projectId: target.projectId, table: target.table, recordId: target.id, field: field.name } }
  }

  private checkSize (field: FieldDefinitionT, size: number): void {
    const max = field.maxSize ?? this.deps.maxSize
    if (size > max) throw fileErrors.fileTooLarge({ limit: max })
  }

  private checkType (field: FieldDefinitionT, type: string): void {
    const allowed = field.allowedTypes ?? []
    if (!typeAllowed(type, allowed)) {
      throw collectionErrors.fileTypeNotAllowed({ field: field.name, allowed, actual: type })
    }
  }
}

const tooMany = (limit: number): AppError => collectionErrors.tooManyFiles({ limit })

function callerId (caller: DataCaller): string | null {
  return caller.kind === 'user' ? caller.id : caller.kind === 'admin' ? caller.userId : null
}
