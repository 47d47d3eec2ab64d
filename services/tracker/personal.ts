import type { Clock } from '../platform/clock.js'
import type { Cursors } from '../collections/query.js'
import type { IdGenerator } from '../platform/ids.js'
import { isoString } from '../platform/iso-dates.js'
import { DuplicateKeyError } from '../store/errors.js'
import type { Store, StoreCollection } from '../store/types.js'
import type { PageOf } from '../../schemas/tracker.js'
import {
  WORKSPACE_LIMITS, type CreateFavoriteBodyT, type CreateStickyBodyT, type FavoriteKindT, type FavoriteT, type RecentKindT, type RecentT,
  type StickyT, type UpdateStickyBodyT
} from '../../schemas/tracker-workspace.js'
import type { TrackerActor, TrackerScope } from './access.js'
import { trackerErrors } from './errors.js'
import { keysetPage, listScope, sortPlan, type PageRequest } from './paging.js'
import type { TrackerWorkspace } from './workspace.js'
import { WORKSPACE_COLLECTIONS, type FavoriteRecord, type RecentRecord, type StickyRecord } from './workspace-records.js'

const STICKY_ORDER = sortPlan([['sortOrder', 1], ['_id', 1]])
const RECENT_ORDER = sortPlan([['openedAt', -1], ['_id', -1]])
const FAVORITE_ORDER = sortPlan([['sortOrder', 1], ['_id', 1]])
// New stickies and favorites go before the first; reordering takes any number between neighbours.
const ORDER_STEP = 1024

/** Whether a caller may still read one thing of a tracker project (its view, cycle, module or page): the services' own reads decide. */
export type CanRead = (scope: TrackerScope, kind: Exclude<FavoriteKindT, 'project'>, entityId: string) => Promise<boolean>

function toSticky (record: StickyRecord): StickyT {
  return { id: record._id, name: record.name, description: record.description, color: record.color, sortOrder: record.sortOrder, createdAt: isoString(record.createdAt), updatedAt: isoString(record.updatedAt) }
}

function toFavorite (record: FavoriteRecord): FavoriteT {
  return { id: record._id, kind: record.kind, lpId: record.lpId, entityId: record.entityId, sortOrder: record.sortOrder, createdAt: isoString(record.createdAt) }
}

/**
 * Each person's own things at the workspace level: stickies (notes),
 * recents (what they opened lately) and favorites. Every read and write
 * names the owner in its filter, so another person's are not found; they
 * need `tracker.read` only, as the caller's notifications do.
 */
export class TrackerPersonal {
  readonly stickies: StoreCollection<StickyRecord>
  readonly recents: StoreCollection<RecentRecord>
  readonly favorites: StoreCollection<FavoriteRecord>

  constructor (store: Store, private readonly deps: { clock: Clock, newId: IdGenerator, cursors: Cursors, workspace: TrackerWorkspace, canRead: CanRead }) {
    this.stickies = store.collection<StickyRecord>(WORKSPACE_COLLECTIONS.stickies)
    this.recents = store.collection<RecentRecord>(WORKSPACE_COLLECTIONS.recents)
    this.favorites = store.collection<FavoriteRecord>(WORKSPACE_COLLECTIONS.favorites)
  }

  async init (): Promise<void> {
    await this.stickies.createIndex({ projectId: 1, ownerId: 1, sortOrder: 1, _id: 1 })
    await this.recents.createIndex({ projectId: 1, userId: 1, openedAt: -1, _id: -1 })
    await this.favorites.createIndex({ projectId: 1, userId: 1, sortOrder: 1, _id: 1 })
    await this.favorites.createIndex({ projectId: 1, key: 1 }, { unique: true })
  }

  // ---------------------------------------------------------------- stickies

  async listStickies (projectId: string, userId: string, request: PageRequest): Promise<PageOf<StickyT>> {
    const { docs, nextCursor } = await keysetPage(this.stickies, { projectId, ownerId: userId }, STICKY_ORDER, request, this.deps.cursors, listScope(projectId, `stickies:${userId}`, null, STICKY_ORDER))
    return { items: docs.map(toSticky), nextCursor }
  }

  async getSticky (projectId: string, userId: string, stickyId: string): Promise<StickyT> {
    return toSticky(await this.sticky(projectId, userId, stickyId))
  }

  async createSticky (projectId: string, userId: string, input: CreateStickyBodyT): Promise<StickyT> {
    if (await this.stickies.countDocuments({ projectId, ownerId: userId }) >= WORKSPACE_LIMITS.stickiesPerUser) {
      throw trackerErrors.limitReached({ what: 'person', limit: WORKSPACE_LIMITS.stickiesPerUser, items: 'stickies' })
    }
    const first = await this.stickies.findOne({ projectId, ownerId: userId }, { sort: STICKY_ORDER.sort, projection: { sortOrder: 1 } })
    const now = this.deps.clock.now()
    const record: StickyRecord = {
      _id: this.deps.newId(),
      projectId,
      ownerId: userId,
      name: input.name?.trim() ?? '',
      description: input.description ?? '',
      color: input.color ?? 'gray',
      sortOrder: input.sortOrder ?? (first === null ? ORDER_STEP : first.sortOrder - ORDER_STEP),
      createdAt: now,
      updatedAt: now
    }
    await this.stickies.insertOne(record)
    return toSticky(record)
  }

  async updateSticky (projectId: string, userId: string, stickyId: string, input: UpdateStickyBodyT): Promise<StickyT> {
    const set: Partial<StickyRecord> = { updatedAt: this.deps.clock.now() }
    if (input.name !== undefined) set.name = input.name.trim()
    if (input.description !== undefined) set.description = input.description
    if (input.color !== undefined) set.color = input.color
    if (input.sortOrder !== undefined) set.sortOrder = input.sortOrder
    const updated = await this.stickies.findOneAndUpdate({ _id: stickyId, projectId, ownerId: userId }, { $set: set }, { returnDocument: 'after' })
    if (updated === null) throw trackerErrors.stickyNotFound()
    return toSticky(updated)
  }

  async deleteSticky (projectId: string, userId: string, stickyId: string): Promise<void> {
    if ((await this.stickies.deleteOne({ _id: stickyId, projectId, ownerId: userId })).deletedCount === 0) throw trackerErrors.stickyNotFound()
  }

  private async sticky (projectId: string, userId: string, stickyId: string): Promise<StickyRecord> {
    const record = await this.stickies.findOne({ _id: stickyId, projectId, ownerId: userId })
    if (record === null) throw trackerErrors.stickyNotFound()
    return record
  }

  // ---------------------------------------------------------------- recents

  /**
   * One upsert per read, keyed by what was opened, so opening it again moves
   * it up; the first time something new joins, the person's entries past
   * WORKSPACE_LIMITS.recentsPerUser drop off. Never fails the read it follows.
   */
  async opened (scope: TrackerScope, kind: RecentKindT, entityId: string): Promise<void> {
    const { projectId } = scope
    const userId = scope.actor.userId
    const result = await this.recents.updateOne(
      { _id: `${projectId}:${userId}:${kind}:${entityId}` },
      { $set: { openedAt: this.deps.clock.now() }, $setOnInsert: { projectId, userId, kind, lpId: scope.project._id, entityId } },
      { upsert: true }
    )
    if (result.upsertedCount === 0) return
    const overflow = await this.recents.find({ projectId, userId }, { sort: RECENT_ORDER.sort, skip: WORKSPACE_LIMITS.recentsPerUser, projection: { _id: 1 } }).toArray()
    if (overflow.length > 0) await this.recents.deleteMany({ _id: { $in: overflow.map((entry) => entry._id) } })
  }

  /** Most recent first, only from tracker projects the caller still reads. */
  async listRecents (actor: TrackerActor, projectId: string, request: PageRequest): Promise<PageOf<RecentT>> {
    const readable = [...(await this.deps.workspace.scopes(actor, projectId)).keys()]
    const filter = { projectId, userId: actor.userId, lpId: { $in: readable } }
    const { docs, nextCursor } = await keysetPage(this.recents, filter, RECENT_ORDER, request, this.deps.cursors, listScope(projectId, `recents:${actor.userId}`, null, RECENT_ORDER))
    return { items: docs.map((record) => ({ kind: record.kind, lpId: record.lpId, entityId: record.entityId, openedAt: isoString(record.openedAt) })), nextCursor }
  }

  // ---------------------------------------------------------------- favorites

  /** In the caller's order; a favorite of something they can no longer read is left out of the page. */
  async listFavorites (actor: TrackerActor, projectId: string, request: PageRequest): Promise<PageOf<FavoriteT>> {
    const scopes = await this.deps.workspace.scopes(actor, projectId)
    const filter = { projectId, userId: actor.userId, lpId: { $in: [...scopes.keys()] } }
    const { docs, nextCursor } = await keysetPage(this.favorites, filter, FAVORITE_ORDER, request, this.deps.cursors, listScope(projectId, `favorites:${actor.userId}`, null, FAVORITE_ORDER))
    const items: FavoriteT[] = []
    for (const doc of docs) {
      const scope = scopes.get(doc.lpId) as TrackerScope
      if (doc.kind === 'project' || await this.deps.canRead(scope, doc.kind, doc.entityId)) items.push(toFavorite(doc))
    }
    return { items, nextCursor }
  }

  async addFavorite (actor: TrackerActor, projectId: string, input: CreateFavoriteBodyT): Promise<FavoriteT> {
    const scope = (await this.deps.workspace.scopes(actor, projectId)).get(input.lpId)
    if (scope === undefined) throw trackerErrors.invalidReference({ path: 'body.lpId', problem: 'names no tracker project the caller reads' })
    const entityId = input.kind === 'project' ? input.lpId : input.entityId
    if (entityId === undefined) throw trackerErrors.invalidValue({ path: 'body.entityId', problem: `is required for a ${input.kind}` })
    if (input.kind !== 'project' && !(await this.deps.canRead(scope, input.kind, entityId))) {
      throw trackerErrors.invalidReference({ path: 'body.entityId', problem: `names no ${input.kind} the caller reads in that tracker project` })
    }
    const userId = actor.userId
    if (await this.favorites.countDocuments({ projectId, userId }) >= WORKSPACE_LIMITS.favoritesPerUser) {
      throw trackerErrors.limitReached({ what: 'person', limit: WORKSPACE_LIMITS.favoritesPerUser, items: 'favorites' })
    }
    const first = await this.favorites.findOne({ projectId, userId }, { sort: FAVORITE_ORDER.sort, projection: { sortOrder: 1 } })
    const record: FavoriteRecord = {
      _id: this.deps.newId(),
      projectId,
      userId,
      kind: input.kind,
      lpId: input.lpId,
      entityId,
      key: `${userId}:${input.kind}:${entityId}`,
      sortOrder: first === null ? ORDER_STEP : first.sortOrder - ORDER_STEP,
      createdAt: this.deps.clock.now()
    }
    try {
      await this.favorites.insertOne(record)
    } catch (error) {
      if (error instanceof DuplicateKeyError) throw trackerErrors.alreadyFavorite()
      throw error
    }
    return toFavorite(record)
  }

  async reorderFavorite (projectId: string, userId: string, favoriteId: string, sortOrder: number): Promise<FavoriteT> {
    const updated = await this.favorites.findOneAndUpdate({ _id: favoriteId, projectId, userId }, { $set: { sortOrder } }, { returnDocument: 'after' })
    if (updated === null) throw trackerErrors.favoriteNotFound()
    return toFavorite(updated)
  }

  async removeFavorite (projectId: string, userId: string, favoriteId: string): Promise<void> {
    if ((await this.favorites.deleteOne({ _id: favoriteId, projectId, userId })).deletedCount === 0) throw trackerErrors.favoriteNotFound()
  }
}
