import type { Readable } from 'node:stream'
import type { Clock } from '../platform/clock.js'
import type { Cursors } from '../collections/query.js'
import type { ByteRange } from '../files/file-store.js'
import type { StoredFile, UploadOwner, UploadSessions, UploadSessionView } from '../files/uploads.js'
import { isoString } from '../platform/iso-dates.js'
import { DuplicateKeyError } from '../store/errors.js'
import type { PagedWrites, Store, StoreCollection } from '../store/types.js'
import { TRACKER_LIMITS, type ListQueryT, type PageOf } from '../../schemas/tracker.js'
import type { AttachmentT, StartAttachmentBodyT } from '../../schemas/tracker-work-items.js'
import { ownsOrAdmin, requireWritable, type TrackerScope } from './access.js'
import { trackerErrors } from './errors.js'
import type { FollowUps } from './follow-ups.js'
import type { ItemStore } from './item-store.js'
import { keysetPage, listScope, sortPlan } from './paging.js'
import { TRACKER_COLLECTIONS, type AttachmentRecord, type ItemRecord } from './records.js'
import type { WorkItems } from './work-items.js'

export const ATTACHMENT_CHANGED = 'attachmentChanged'
const ORDER = sortPlan([['_id', 1]])

/** The file store's owner of an item's attachments: a folder per tracker project, then per item. */
export const attachmentOwner = (item: Pick<ItemRecord, '_id' | 'projectId' | 'lpId'>): UploadOwner => ({ projectId: item.projectId, table: `_tracker-${item.lpId}`, recordId: item._id, field: 'attachments' })

function toView (record: AttachmentRecord): AttachmentT {
  return { id: record._id, itemId: record.itemId, name: record.name, size: record.size, type: record.type, sha256: record.sha256, createdBy: record.createdBy, createdAt: isoString(record.createdAt) }
}

/**
 * Files attached to work items, uploaded through the file store's upload
 * sessions (start → chunks → complete): completing attaches the file by
 * writing its record under the file's id, so a retried complete attaches it
 * once, and an unfinished upload never shows.
 */
export class TrackerAttachments {
  readonly records: StoreCollection<AttachmentRecord>
  /** A tracker project's attachments go page by page: it may hold more than one write may remove. */
  private readonly sweep: PagedWrites

  constructor (store: Store, private readonly deps: { clock: Clock, cursors: Cursors, uploads: UploadSessions, sessionStarted?: () => Promise<void>, items: ItemStore, workItems: WorkItems, followUps: FollowUps }) {
    this.records = store.collection<AttachmentRecord>(TRACKER_COLLECTIONS.attachments)
    this.sweep = store.extensions.sweep(TRACKER_COLLECTIONS.attachments)
    deps.followUps.on(ATTACHMENT_CHANGED, async (task) => { await this.changed(task as unknown as { attachment: AttachmentRecord | null, sessionId: string, itemId: string, added: boolean, actorId: string, at: Date }) })
  }

  async init (): Promise<void> {
    await this.records.createIndex({ itemId: 1, _id: 1 })
    await this.records.createIndex({ sessionId: 1 })
    await this.records.createIndex({ lpId: 1 })
  }

  async list (scope: TrackerScope, itemId: string, page: ListQueryT): Promise<PageOf<AttachmentT>> {
    await this.deps.workItems.visible(scope, itemId)
    const { docs, nextCursor } = await keysetPage(this.records, { itemId }, ORDER, page, this.deps.cursors, listScope(scope.projectId, `attachments:${itemId}`, null, ORDER))
    return { items: docs.map(toView), nextCursor }
  }

  async start (scope: TrackerScope, itemId: string, input: StartAttachmentBodyT): Promise<UploadSessionView> {
    requireWritable(scope)
    const item = await this.deps.workItems.visible(scope, itemId)
    if (input.size > TRACKER_LIMITS.attachmentBytes) throw trackerErrors.invalidValue({ path: 'body.size', problem: `is more than ${TRACKER_LIMITS.attachmentBytes} bytes` })
    if (await this.records.countDocuments({ itemId }) >= TRACKER_LIMITS.attachmentsPerItem) throw trackerErrors.limitReached({ what: 'work item', limit: TRACKER_LIMITS.attachmentsPerItem, items: 'attachments' })
    const session = await this.deps.uploads.start(attachmentOwner(item), { name: input.name, size: input.size, type: input.type, sha256: input.sha256, createdBy: scope.actor.userId })
    await this.deps.sessionStarted?.()
    return session
  }

  async status (scope: TrackerScope, itemId: string, sessionId: string): Promise<UploadSessionView> {
    return await this.deps.uploads.status(sessionId, attachmentOwner(await this.deps.workItems.visible(scope, itemId)))
  }

  async putChunk (scope: TrackerScope, itemId: string, sessionId: string, index: number, body: Buffer | Readable): Promise<UploadSessionView> {
    requireWritable(scope)
    return await this.deps.uploads.putChunk(sessionId, attachmentOwner(await this.deps.workItems.visible(scope, itemId)), index, body)
  }

  async abort (scope: TrackerScope, itemId: string, sessionId: string): Promise<UploadSessionView> {
    return await this.deps.uploads.abort(sessionId, attachmentOwner(await this.deps.workItems.visible(scope, itemId)))
  }

  async complete (scope: TrackerScope, itemId: string, sessionId: string): Promise<AttachmentT> {
    requireWritable(scope)
    const item = await this.deps.workItems.visible(scope, itemId)
    const actorId = scope.actor.userId
    await this.deps.followUps.guard({ kind: ATTACHMENT_CHANGED, attachment: null, sessionId, itemId, added: true, actorId, at: this.deps.clock.now() }, async () => {
      await this.deps.uploads.complete(sessionId, attachmentOwner(item), async (file: StoredFile) => {
        try {
          await this.records.insertOne({
            _id: file.id, projectId: item.projectId, lpId: item.lpId, itemId, sessionId, name: file.name, size: file.size, type: file.type, sha256: file.sha256, createdBy: actorId, createdAt: this.deps.clock.now()
          })
        } catch (error) {
          if (!(error instanceof DuplicateKeyError)) throw error
        }
      })
    })
    const record = await this.records.findOne({ sessionId, itemId })
    if (record === null) throw trackerErrors.attachmentNotFound()
    return toView(record)
  }

  async get (scope: TrackerScope, itemId: string, attachmentId: string): Promise<AttachmentT> {
    await this.deps.workItems.visible(scope, itemId)
    return toView(await this.record(itemId, attachmentId))
  }

  /** The record and the bytes (or a range) of one attachment. */
  async open (scope: TrackerScope, itemId: string, attachmentId: string, range?: ByteRange): Promise<{ attachment: AttachmentT, stream: Readable, size: number }> {
    const item = await this.deps.workItems.visible(scope, itemId)
    const record = await this.record(itemId, attachmentId)
    return { attachment: toView(record), ...await this.deps.uploads.openFile(attachmentOwner(item), record._id, range) }
  }

  /** Its record first (it is gone for readers), then its bytes. */
  async delete (scope: TrackerScope, itemId: string, attachmentId: string): Promise<void> {
    requireWritable(scope)
    const item = await this.deps.workItems.visible(scope, itemId)
    const attachment = await this.record(itemId, attachmentId)
    if (!ownsOrAdmin(scope, attachment.createdBy)) throw trackerErrors.notYours({ owner: 'uploader', action: 'remove this attachment' })
    await this.deps.followUps.guard({ kind: ATTACHMENT_CHANGED, attachment, sessionId: attachment.sessionId, itemId, added: false, actorId: scope.actor.userId, at: this.deps.clock.now() }, async () => {
      await this.records.deleteOne({ _id: attachmentId })
    })
    await this.deps.uploads.deleteFile(attachmentOwner(item), attachmentId)
  }

  private async changed (task: { attachment: AttachmentRecord | null, sessionId: string, itemId: string, added: boolean, actorId: string, at: Date }): Promise<void> {
    const present = await this.records.findOne({ sessionId: task.sessionId, itemId: task.itemId })
    if (task.added) {
      if (present === null) return
      await this.deps.items.record({ _id: present.itemId, projectId: present.projectId, lpId: present.lpId }, `${present.itemId}:attachment-added:${present._id}`, task.actorId, { field: 'attachment', from: null, to: present.name }, new Date(task.at))
      return
    }
    const gone = task.attachment as AttachmentRecord
    if (present !== null) return
    await this.deps.items.record({ _id: gone.itemId, projectId: gone.projectId, lpId: gone.lpId }, `${gone.itemId}:attachment-removed:${gone._id}`, task.actorId, { field: 'attachment', from: gone.name, to: null }, new Date(task.at))
    await this.deps.uploads.deleteFile(attachmentOwner(gone), gone._id)
  }

  async purgeItem (item: Pick<ItemRecord, '_id' | 'projectId' | 'lpId'>): Promise<void> {
    await this.records.deleteMany({ itemId: item._id })
    await this.deps.uploads.deleteOwnerFolder(item.projectId, `_tracker-${item.lpId}`, item._id)
  }

  async purge (projectId: string, lpId: string): Promise<void> {
    await this.sweep.deleteMany({ lpId })
    await this.deps.uploads.deleteOwnerFolder(projectId, `_tracker-${lpId}`)
  }

  private async record (itemId: string, attachmentId: string): Promise<AttachmentRecord> {
    const record = await this.records.findOne({ _id: attachmentId, itemId })
    if (record === null) throw trackerErrors.attachmentNotFound()
    return record
  }
}
