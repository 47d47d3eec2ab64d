import type { Clock } from '../platform/clock.js'
import type { Cursors } from '../collections/query.js'
import type { IdGenerator } from '../platform/ids.js'
import { isoString } from '../platform/iso-dates.js'
import { DuplicateKeyError } from '../store/errors.js'
import type { Filter, Store, StoreCollection } from '../store/types.js'
import { TRACKER_LIMITS, type ListQueryT, type PageOf } from '../../schemas/tracker.js'
import type { CreatePageBodyT, ListPagesQueryT, PageVersionT, TrackerPageT, UpdatePageBodyT } from '../../schemas/tracker-planning.js'
import { ownsOrAdmin, refuseGuest, requireFeature, requireWritable, type TrackerScope } from './access.js'
import { trackerErrors } from './errors.js'
import type { FollowUps } from './follow-ups.js'
import { keysetPage, listScope, sortPlan } from './paging.js'
import { TRACKER_COLLECTIONS, type PageRecord, type PageVersionRecord } from './records.js'
import { markdownText } from './text.js'

export const DELETE_PAGE = 'pageDelete'
const ORDER = sortPlan([['_id', 1]])
const VERSION_ORDER = sortPlan([['savedAt', -1], ['_id', -1]])
/** A closed version's id: the page and the page version it closed at, so closing the same state twice writes it once. */
const versionId = (pageId: string, version: number): string => `${pageId}:${version}`

function toView (record: PageRecord): TrackerPageT {
  return {
    id: record._id,
    title: record.title,
    content: record.content,
    text: record.text,
    parentId: record.parentId,
    ownerId: record.ownerId,
    access: record.access,
    locked: record.lockedBy !== null,
    lockedBy: record.lockedBy,
    archivedAt: record.archivedAt === null ? null : isoString(record.archivedAt),
    createdAt: isoString(record.createdAt),
    updatedAt: isoString(record.updatedAt),
    updatedBy: record.updatedBy,
    version: record.version
  }
}

function versionView (record: PageVersionRecord, current: boolean): PageVersionT {
  return { id: record._id, pageId: record.pageId, title: record.title, content: record.content, authorId: record.authorId, startedAt: isoString(record.startedAt), savedAt: isoString(record.savedAt), current }
}

/**
 * Pages: markdown documents, nested, lockable, archivable, with versions. The
 * page itself is its open version: edits by the same author within a few
 * minutes of their last change it in place; any other edit first closes the
 * open version (written under a derived id, so a retry writes it once), then
 * changes the page conditionally on its version. Restoring a version is such
 * an edit, so nothing is ever lost by a restore.
 */
export class TrackerPages {
  readonly records: StoreCollection<PageRecord>
  readonly versions: StoreCollection<PageVersionRecord>

  constructor (store: Store, private readonly deps: { clock: Clock, newId: IdGenerator, cursors: Cursors, followUps: FollowUps }) {
    this.records = store.collection<PageRecord>(TRACKER_COLLECTIONS.pages)
    this.versions = store.collection<PageVersionRecord>(TRACKER_COLLECTIONS.pageVersions)
  }

  async init (): Promise<void> {
    await this.records.createIndex({ lpId: 1, parentId: 1, _id: 1 })
    await this.versions.createIndex({ pageId: 1, savedAt: 1, _id: 1 })
    await this.versions.createIndex({ lpId: 1 })
  }

  async list (scope: TrackerScope, query: ListPagesQueryT): Promise<PageOf<TrackerPageT>> {
    this.guard(scope)
    const filter: Filter = {
      lpId: scope.project._id, parentId: query.parentId ?? null, archivedAt: query.archived === true ? { $ne: null } : null, $or: [{ access: 'public' }, { ownerId: scope.actor.userId }]
    }
    const { docs, nextCursor } = await keysetPage(this.records, filter, ORDER, query, this.deps.cursors, listScope(scope.projectId, `pages:${scope.project._id}`, { parentId: query.parentId ?? null, archived: query.archived === true }, ORDER))
    return { items: docs.map(toView), nextCursor }
  }

  async get (scope: TrackerScope, pageId: string): Promise<TrackerPageT> {
    this.guard(scope)
    return toView(await this.visible(scope, pageId))
  }

  async create (scope: TrackerScope, input: CreatePageBodyT): Promise<TrackerPageT> {
    this.guard(scope)
    requireWritable(scope)
    const parentId = input.parentId ?? null
    if (parentId !== null) await this.checkParent(scope, null, parentId)
    const now = this.deps.clock.now()
    const content = input.content ?? ''
    const record: PageRecord = {
      _id: this.deps.newId(),
      projectId: scope.projectId,
      lpId: scope.project._id,
      title: input.title.trim(),
      content,
      text: markdownText(content),
      parentId,
      ownerId: scope.actor.userId,
      access: input.access ?? 'public',
      lockedBy: null,
      archivedAt: null,
      session: { authorId: scope.actor.userId, startedAt: now, lastAt: now },
      createdAt: now,
      updatedAt: now,
      updatedBy: scope.actor.userId,
      version: 1
    }
    await this.records.insertOne(record)
    return toView(record)
  }

  async update (scope: TrackerScope, pageId: string, input: UpdatePageBodyT, ifMatch?: number): Promise<TrackerPageT> {
    this.guard(scope)
    requireWritable(scope)
    const page = await this.visible(scope, pageId)
    if (ifMatch !== undefined && ifMatch !== page.version) throw trackerErrors.versionMismatch({ what: 'page', expected: ifMatch, actual: page.version })
    if (page.lockedBy !== null) {
      if (input.locked !== false) throw trackerErrors.pageLocked()
      if (!ownsOrAdmin(scope, page.lockedBy)) throw trackerErrors.notYours({ owner: 'locker', action: 'unlock this page' })
    }
    if (page.archivedAt !== null && input.archived !== false) throw trackerErrors.pageArchived()
    const set: Partial<PageRecord> = {}
    if ((input.access !== undefined || input.parentId !== undefined || input.archived !== undefined) && !ownsOrAdmin(scope, page.ownerId)) {
      throw trackerErrors.notYours({ owner: 'owner', action: 'move, share or archive this page' })
    }
    if (input.access !== undefined) set.access = input.access
    if (input.parentId !== undefined && input.parentId !== page.parentId) {
      if (input.parentId !== null) await this.checkParent(scope, page._id, input.parentId)
      set.parentId = input.parentId
    }
    if (input.locked !== undefined) set.lockedBy = input.locked ? scope.actor.userId : null
    if (input.archived !== undefined) set.archivedAt = input.archived ? page.archivedAt ?? this.deps.clock.now() : null
    return toView(await this.edit(scope, page, input.title, input.content, set))
  }

  /** Closed versions newest first, the page as it is now before them on the first page. */
  async listVersions (scope: TrackerScope, pageId: string, page: ListQueryT): Promise<PageOf<PageVersionT>> {
    this.guard(scope)
    const current = await this.visible(scope, pageId)
    const { docs, nextCursor } = await keysetPage(this.versions, { pageId }, VERSION_ORDER, page, this.deps.cursors, listScope(scope.projectId, `page-versions:${pageId}`, null, VERSION_ORDER))
    const items = docs.map((doc) => versionView(doc, false))
    if (page.cursor === undefined) items.unshift(versionView(this.openVersion(current), true))
    return { items, nextCursor }
  }

  async getVersion (scope: TrackerScope, pageId: string, versionIdAsked: string): Promise<PageVersionT> {
    this.guard(scope)
    const current = await this.visible(scope, pageId)
    if (versionIdAsked === versionId(pageId, current.version)) return versionView(this.openVersion(current), true)
    const version = await this.versions.findOne({ _id: versionIdAsked, pageId })
    if (version === null) throw trackerErrors.pageVersionNotFound()
    return versionView(version, false)
  }

  /** The version's title and content become the page's, as an edit by the caller (the page as it was is kept as a version). */
  async restore (scope: TrackerScope, pageId: string, versionIdAsked: string): Promise<TrackerPageT> {
    this.guard(scope)
    requireWritable(scope)
    const page = await this.visible(scope, pageId)
    if (page.lockedBy !== null) throw trackerErrors.pageLocked()
    if (page.archivedAt !== null) throw trackerErrors.pageArchived()
    if (versionIdAsked === versionId(pageId, page.version)) return toView(page)
    const version = await this.versions.findOne({ _id: versionIdAsked, pageId })
    if (version === null) throw trackerErrors.pageVersionNotFound()
    return toView(await this.edit(scope, page, version.title, version.content, {}, true))
  }

  /** The page goes; its versions go and its children become top-level after (follow-up pageDelete). */
  async delete (scope: TrackerScope, pageId: string): Promise<void> {
    this.guard(scope)
    requireWritable(scope)
    const page = await this.visible(scope, pageId)
    if (page.lockedBy !== null) throw trackerErrors.pageLocked()
    if (!ownsOrAdmin(scope, page.ownerId)) throw trackerErrors.notYours({ owner: 'owner', action: 'delete this page' })
    await this.deps.followUps.guard({ kind: DELETE_PAGE, lpId: page.lpId, pageId }, async () => { await this.records.deleteOne({ _id: pageId }) })
  }

  async removeRest (lpId: string, pageId: string): Promise<void> {
    await this.versions.deleteMany({ pageId })
    await this.records.updateMany({ lpId, parentId: pageId }, { $set: { parentId: null } })
  }

  async purge (lpId: string): Promise<void> {
    await this.versions.deleteMany({ lpId })
    await this.records.deleteMany({ lpId })
  }

  /**
   * One edit: in place when the same author edits again within the merge
   * window, else after closing the open version. `forceVersion` closes it
   * whatever the window (a restore is always its own version).
   */
  private async edit (scope: TrackerScope, page: PageRecord, title: string | undefined, content: string | undefined, set: Partial<PageRecord>, forceVersion = false): Promise<PageRecord> {
    const now = this.deps.clock.now()
    const me = scope.actor.userId
    const changesText = (title !== undefined && title.trim() !== page.title) || (content !== undefined && content !== page.content)
    if (changesText) {
      if (content !== undefined && content.length > TRACKER_LIMITS.bodyLength) throw trackerErrors.invalidValue({ path: 'body.content', problem: `is longer than ${TRACKER_LIMITS.bodyLength} characters` })
      const merging = !forceVersion && page.session.authorId === me && now.getTime() - page.session.lastAt.getTime() < TRACKER_LIMITS.pageVersionMergeMs
      if (!merging) {
        try {
          await this.versions.insertOne(this.openVersion(page))
        } catch (error) {
          if (!(error instanceof DuplicateKeyError)) throw error
        }
      }
      if (title !== undefined) set.title = title.trim()
      if (content !== undefined) Object.assign(set, { content, text: markdownText(content) })
      set.session = merging ? { ...page.session, lastAt: now } : { authorId: me, startedAt: now, lastAt: now }
    }
    if (Object.keys(set).length === 0) return page
    const updated = await this.records.findOneAndUpdate({ _id: page._id, version: page.version }, { $set: { ...set, updatedAt: now, updatedBy: me, version: page.version + 1 } }, { returnDocument: 'after' })
    if (updated === null) throw trackerErrors.changed({ what: 'page' })
    return updated
  }

  /** The page's open version as it would be closed now. */
  private openVersion (page: PageRecord): PageVersionRecord {
    return { _id: versionId(page._id, page.version), projectId: page.projectId, lpId: page.lpId, pageId: page._id, title: page.title, content: page.content, authorId: page.session.authorId, startedAt: page.session.startedAt, savedAt: page.session.lastAt }
  }

  private guard (scope: TrackerScope): void {
    requireFeature(scope, 'pages')
    refuseGuest(scope, 'use pages')
  }

  private async visible (scope: TrackerScope, pageId: string): Promise<PageRecord> {
    const page = await this.records.findOne({ _id: pageId, lpId: scope.project._id })
    if (page === null || (page.access === 'private' && page.ownerId !== scope.actor.userId)) throw trackerErrors.pageNotFound()
    return page
  }

  /** A visible page of the project, not the page nor below it, no deeper than the limit. */
  private async checkParent (scope: TrackerScope, pageId: string | null, parentId: string): Promise<void> {
    let current: PageRecord | null = await this.records.findOne({ _id: parentId, lpId: scope.project._id })
    if (current === null || (current.access === 'private' && current.ownerId !== scope.actor.userId)) throw trackerErrors.invalidReference({ path: 'body.parentId', problem: 'is not a page of this tracker project' })
    for (let depth = 1; current !== null; depth++) {
      if (current._id === pageId) throw trackerErrors.parentLoop({ problem: 'The parent is this page or one below it' })
      if (depth >= TRACKER_LIMITS.pageDepth) throw trackerErrors.parentLoop({ problem: `Pages nest at most ${TRACKER_LIMITS.pageDepth} levels` })
      current = current.parentId === null ? null : await this.records.findOne({ _id: current.parentId })
    }
  }
}
