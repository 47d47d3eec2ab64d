import type { Clock } from '../platform/clock.js'
import type { Cursors } from '../collections/query.js'
import { AppError } from '../platform/errors.js'
import type { FileStore } from '../files/file-store.js'
import type { IdGenerator } from '../platform/ids.js'
import { isoString, isoStringOrNull } from '../platform/iso-dates.js'
import type { SignedLinks } from '../platform/signed-links.js'
import type { Filter, Store, StoreCollection, WithId } from '../store/types.js'
import type { PageOf } from '../../schemas/tracker.js'
import { EXPORT_LIMITS, type CreateExportBodyT, type ExportFormatT, type ExportStatusT, type TrackerExportT } from '../../schemas/tracker-reports.js'
import type { TrackerActor, TrackerScope } from './access.js'
import { trackerErrors } from './errors.js'
import { CONTENT_TYPES, writeExportFile, type Row } from './export-files.js'
import { checkFilter } from './filters.js'
import type { FollowUpQueue } from './follow-ups.js'
import type { ItemLists } from './item-lists.js'
import { itemKey } from './item-rules.js'
import { keysetPage, listScope, sortPlan } from './paging.js'
import { TRACKER_COLLECTIONS, type CommentRecord, type ItemRecord } from './records.js'

export const TRACKER_EXPORT_JOB = 'tracker.export'
export const TRACKER_EXPORT_SWEEP_JOB = 'tracker.exports.sweep'
export const TRACKER_EXPORT_SWEEP_EVERY_MS = 60 * 60_000
export const TRACKER_EXPORTS_COLLECTION = 'tracker_exports'

const DAY_MS = 24 * 3_600_000
const PAGE = 1000
const NEWEST_FIRST = sortPlan([['_id', -1]])

export type ExportRecord = WithId<{
  projectId: string
  lpId: string
  userId: string
  format: ExportFormatT
  filterJson: string | null
  comments: boolean
  status: ExportStatusT
  itemCount: number | null
  size: number | null
  fileKey: string | null
  error: string | null
  createdAt: Date
  startedAt: Date | null
  finishedAt: Date | null
  expiresAt: Date | null
}>

export interface ExportDeps {
  clock: Clock
  newId: IdGenerator
  cursors: Cursors
  files: FileStore
  jobs: FollowUpQueue
  lists: ItemLists
  links: SignedLinks
  /** The tracker project as this user may use it now, or a refusal (the job re-checks access when it runs). */
  scopeOf: (projectId: string, userId: string, lpId: string) => Promise<TrackerScope>
  /** Where a download link points: the route's path for the export's file. */
  downloadPath: (projectId: string, exportId: string) => string
}

/** Names of what an item refers to, for the file's readers: states, labels, cycles, modules. */
type Names = Record<'states' | 'labels' | 'cycles' | 'modules', Map<string, string>>

/**
 * Exports of work items, as jobs on the durable queue: a request is queued,
 * a worker writes the matching items (the caller's visibility and the filter
 * grammar, as lists apply them) to CSV, JSON or XLSX in the file store, and
 * the caller downloads it through a signed link that expires. Each user has
 * their own history; finished exports are cleaned up after
 * EXPORT_LIMITS.retentionDays by an hourly sweep.
 */
export class TrackerExports {
  readonly records: StoreCollection<ExportRecord>

  constructor (private readonly store: Store, private readonly deps: ExportDeps) {
    this.records = store.collection<ExportRecord>(TRACKER_EXPORTS_COLLECTION)
  }

  async init (): Promise<void> {
    await this.records.createIndex({ projectId: 1, userId: 1, _id: 1 })
    await this.records.createIndex({ finishedAt: 1 })
  }

  /** Queues an export of what the caller sees in the tracker project; the filter is checked now. */
  async create (actor: TrackerActor, projectId: string, body: CreateExportBodyT): Promise<TrackerExportT> {
    const scope = await this.deps.scopeOf(projectId, actor.userId, body.lpId)
    const tree = body.filter === undefined || body.filter === null ? null : checkFilter(body.filter, 'body.filter')
    await this.deps.lists.filterFor(scope, undefined, undefined, tree)
    const record: ExportRecord = {
      _id: this.deps.newId(),
      projectId,
      lpId: scope.project._id,
      userId: actor.userId,
      format: body.format,
      filterJson: tree === null ? null : JSON.stringify(tree),
      comments: body.comments ?? false,
      status: 'queued',
      itemCount: null,
      size: null,
      fileKey: null,
      error: null,
      createdAt: this.deps.clock.now(),
      startedAt: null,
      finishedAt: null,
      expiresAt: null
    }
    await this.records.insertOne(record)
    await this.deps.jobs.enqueue(TRACKER_EXPORT_JOB, { exportId: record._id }, { delayMs: 0 })
    return this.view(record)
  }

  /** The caller's exports in the platform project, newest first. */
  async list (actor: TrackerActor, projectId: string, page: { limit?: number, cursor?: string }): Promise<PageOf<TrackerExportT>> {
    const filter = { projectId, userId: actor.userId }
    const request = { limit: Math.min(page.limit ?? EXPORT_LIMITS.pageDefault, EXPORT_LIMITS.pageMax), ...(page.cursor === undefined ? {} : { cursor: page.cursor }) }
    const { docs, nextCursor } = await keysetPage(this.records, filter, NEWEST_FIRST, request, this.deps.cursors, listScope(projectId, `exports:${actor.userId}`, {}, NEWEST_FIRST))
    return { items: docs.map((record) => this.view(record)), nextCursor }
  }

  async get (actor: TrackerActor, projectId: string, exportId: string): Promise<TrackerExportT> {
    return this.view(await this.own(actor, projectId, exportId))
  }

  /** The caller's export deleted now, with its file. */
  async delete (actor: TrackerActor, projectId: string, exportId: string): Promise<void> {
    await this.remove(await this.own(actor, projectId, exportId))
  }

  /** The file a signed link names, while the link holds and its owner may still read the tracker project: what the download route streams. */
  async download (projectId: string, exportId: string, expires: number, signature: string): Promise<{ body: NodeJS.ReadableStream, size: number, contentType: string, filename: string }> {
    if (!this.deps.links.verify(`${projectId}:${exportId}`, expires, signature, Math.floor(this.deps.clock.nowMs() / 1000))) throw trackerErrors.exportLinkInvalid()
    const record = await this.records.findOne({ _id: exportId, projectId })
    if (record === null) throw trackerErrors.exportNotFound()
    if (record.status !== 'completed' || record.fileKey === null) throw trackerErrors.exportNotReady({ status: record.status })
    // The link carries no credential, so it is only as good as its owner's access now: a member removed since is refused.
    await this.deps.scopeOf(record.projectId, record.userId, record.lpId)
    return {
      body: await this.deps.files.read(record.fileKey),
      size: record.size ?? 0,
      contentType: CONTENT_TYPES[record.format],
      filename: `${record.lpId}-${record._id}.${record.format}`
    }
  }

  /** The job: writes the file, or records why it could not. Access is checked again, as of now. */
  async run (exportId: string): Promise<{ status: ExportStatusT, itemCount?: number }> {
    const record = await this.records.findOneAndUpdate({ _id: exportId, status: { $in: ['queued', 'processing'] } }, { $set: { status: 'processing', startedAt: this.deps.clock.now() } }, { returnDocument: 'after' })
    if (record === null) return { status: 'failed' }
    try {
      const scope = await this.deps.scopeOf(record.projectId, record.userId, record.lpId)
      const { items, comments } = await this.rows(scope, record)
      const meta = { exportedAt: isoString(this.deps.clock.now()), project: { id: scope.project._id, identifier: scope.project.identifier, name: scope.project.name }, filter: record.filterJson === null ? null : JSON.parse(record.filterJson) }
      const file = await writeExportFile(record.format, { items, comments, meta })
      const fileKey = `tracker-exports/${record.projectId}/${record._id}`
      await this.deps.files.write(fileKey, file)
      const now = this.deps.clock.now()
      await this.records.updateOne({ _id: record._id }, {
        $set: { status: 'completed', itemCount: items.length, size: file.length, fileKey, finishedAt: now, expiresAt: new Date(now.getTime() + EXPORT_LIMITS.retentionDays * DAY_MS) }
      })
      return { status: 'completed', itemCount: items.length }
    } catch (error) {
      const now = this.deps.clock.now()
      const message = error instanceof AppError ? error.message : 'The export failed on the server; try again'
      await this.records.updateOne({ _id: record._id }, { $set: { status: 'failed', error: message, finishedAt: now, expiresAt: new Date(now.getTime() + EXPORT_LIMITS.retentionDays * DAY_MS) } })
      if (!(error instanceof AppError)) throw error
      return { status: 'failed' }
    }
  }

  /** Deletes exports (and files) whose time is up, and those a crash left queued for longer than the retention. */
  async sweep (): Promise<{ deleted: number }> {
    const now = this.deps.clock.nowMs()
    const old = await this.records.find({ $or: [{ expiresAt: { $lt: new Date(now) } }, { expiresAt: null, createdAt: { $lt: new Date(now - EXPORT_LIMITS.retentionDays * DAY_MS) } }] }, { limit: 1000 }).toArray()
    for (const record of old) await this.remove(record)
    return { deleted: old.length }
  }

  async deleteAllForProject (projectId: string): Promise<void> {
    for (const record of await this.records.find({ projectId }).toArray()) await this.remove(record)
  }

  private async remove (record: ExportRecord): Promise<void> {
    if (record.fileKey !== null) await this.deps.files.delete(record.fileKey)
    await this.records.deleteOne({ _id: record._id })
  }

  private async own (actor: TrackerActor, projectId: string, exportId: string): Promise<ExportRecord> {
    const record = await this.records.findOne({ _id: exportId })
    if (record === null || record.projectId !== projectId || record.userId !== actor.userId) throw trackerErrors.exportNotFound()
    return record
  }

  private view (record: ExportRecord): TrackerExportT {
    let download: TrackerExportT['download'] = null
    if (record.status === 'completed') {
      const expires = Math.floor(this.deps.clock.nowMs() / 1000) + EXPORT_LIMITS.linkSeconds
      const signature = this.deps.links.sign(`${record.projectId}:${record._id}`, expires)
      download = { url: `${this.deps.downloadPath(record.projectId, record._id)}?expires=${expires}&signature=${signature}`, expiresAt: isoString(new Date(expires * 1000)) }
    }
    return {
      id: record._id,
      lpId: record.lpId,
      format: record.format,
      filter: record.filterJson === null ? null : JSON.parse(record.filterJson),
      comments: record.comments,
      status: record.status,
      itemCount: record.itemCount,
      size: record.size,
      error: record.error,
      createdAt: isoString(record.createdAt),
      finishedAt: isoStringOrNull(record.finishedAt),
      expiresAt: isoStringOrNull(record.expiresAt),
      download
    }
  }

  /** The rows: every matching item the user sees, by number, and their comments when asked. */
  private async rows (scope: TrackerScope, record: ExportRecord): Promise<{ items: Row[], comments: Row[] | null }> {
    const tree = record.filterJson === null ? null : JSON.parse(record.filterJson)
    const { filter } = await this.deps.lists.filterFor(scope, undefined, undefined, tree)
    const names = await this.names(scope.project._id)
    const identifier = scope.project.identifier
    const items = this.store.collection<ItemRecord>(TRACKER_COLLECTIONS.items)
    const commentRecords = this.store.collection<CommentRecord>(TRACKER_COLLECTIONS.comments)
    const rows: Row[] = []
    const comments: Row[] | null = record.comments ? [] : null
    let after = 0
    for (;;) {
      const page = await items.find({ $and: [filter, { seq: { $gt: after } }] } as Filter, { sort: { seq: 1 }, limit: PAGE, projection: { outbox: 0, descriptionJson: 0 } }).toArray()
      for (const item of page) rows.push(this.row(item, identifier, names))
      if (comments !== null && page.length > 0) {
        const keys = new Map(page.map((item) => [item._id, itemKey(identifier, item.seq)]))
        const found = await commentRecords.find({ itemId: { $in: [...keys.keys()] } }, { sort: { createdAt: 1, _id: 1 } }).toArray()
        for (const comment of found) comments.push({ item: keys.get(comment.itemId) ?? null, author: comment.authorId, createdAt: isoString(comment.createdAt), text: comment.text })
      }
      if (rows.length > EXPORT_LIMITS.maxItems) throw trackerErrors.invalidValue({ path: 'body.filter', problem: `matches more than ${EXPORT_LIMITS.maxItems} items: export in parts, with a filter` })
      if (page.length < PAGE) return { items: rows, comments }
      after = page[page.length - 1].seq
    }
  }

  private row (item: ItemRecord, identifier: string, names: Names): Row {
    const name = (map: Map<string, string>, id: string | null) => id === null ? null : map.get(id) ?? id
    return {
      key: itemKey(identifier, item.seq),
      title: item.title,
      state: name(names.states, item.stateId),
      stateGroup: item.stateGroup,
      priority: item.priority,
      assignees: item.assignees.join(', '),
      labels: item.labelIds.map((id) => name(names.labels, id)).join(', '),
      estimate: item.estimate,
      startDate: item.startDate,
      targetDate: item.targetDate,
      cycle: name(names.cycles, item.cycleId),
      modules: item.moduleIds.map((id) => name(names.modules, id)).join(', '),
      createdBy: item.createdBy,
      createdAt: isoString(item.createdAt),
      updatedAt: isoString(item.updatedAt),
      completedAt: isoStringOrNull(item.completedAt),
      description: item.descriptionText
    }
  }

  private async names (lpId: string): Promise<Names> {
    const load = async (collection: string): Promise<Map<string, string>> => {
      const found = await this.store.collection<WithId<{ lpId: string, name: string }>>(collection).find({ lpId }, { projection: { name: 1 } }).toArray()
      return new Map(found.map((record) => [record._id, record.name]))
    }
    return { states: await load(TRACKER_COLLECTIONS.states), labels: await load(TRACKER_COLLECTIONS.labels), cycles: await load(TRACKER_COLLECTIONS.cycles), modules: await load(TRACKER_COLLECTIONS.modules) }
  }
}
