import type { Document, WithId } from '../store/types.js'
import type { DataCaller } from './access.js'
import type { DataCollection } from './records.js'

/** Run after records went, so the files they referenced go with them. */
export type RecordsRemoved = (projectId: string, collection: DataCollection, records: Array<WithId<Document>>) => Promise<void>
/** Run after records were changed through the data API, with the values set on every one of them and the records as they were. */
export type RecordsUpdated = (projectId: string, collection: DataCollection, ids: string[], changes: Document, before: Array<WithId<Document>>) => Promise<void>

/** Who made a record write, as the change feed tells it. */
export type RecordActor = { type: 'user' | 'admin' | 'anonymous', id: string | null }

/** One record write as the change feed sees it: the record as the write leaves it (as it was, for a delete). */
export interface RecordChange {
  collection: string
  type: 'record.created' | 'record.updated' | 'record.deleted'
  record: WithId<Document>
  before: WithId<Document> | null
  actor: RecordActor
  at: Date
}

/**
 * The change feed of record writes (services/auxiliary/record-feed.ts): its
 * entries are written before the write they describe, so an acknowledged
 * write's change survives a crash, and settled after it.
 */
export interface RecordChangeFeed {
  /** Null, writing nothing, when no one follows the project's writes; `changes` is only called otherwise. */
  begin: (projectId: string, changes: () => RecordChange[]) => Promise<RecordChangeBatch | null>
}

export interface RecordChangeBatch {
  /** The write was made, for the records named (every one by default). Never throws: what it could not finish, the feed's sweep does. */
  done: (happened?: ReadonlySet<string>) => Promise<void>
  /** The write was not made. Never throws. */
  failed: () => Promise<void>
}

export function actorOf (caller: DataCaller): RecordActor {
  if (caller.kind === 'user') return { type: 'user', id: caller.id }
  if (caller.kind === 'admin') return { type: 'admin', id: caller.userId }
  return { type: 'anonymous', id: null }
}

/**
 * Who hears of the data API's record writes: the change feed, around each
 * write, and the hooks that follow a write that happened (the files of
 * removed records and cleared fields, an end user's sessions).
 */
export class RecordListeners {
  private readonly removedHooks: RecordsRemoved[] = []
  private readonly updatedHooks: RecordsUpdated[] = []
  private feed: RecordChangeFeed | null = null

  onRemove (hook: RecordsRemoved): void {
    this.removedHooks.push(hook)
  }

  onUpdate (hook: RecordsUpdated): void {
    this.updatedHooks.push(hook)
  }

  useChangeFeed (feed: RecordChangeFeed): void {
    this.feed = feed
  }

  /** Runs a write between its change feed entries: written before it, settled after it. */
  async logged<T> (projectId: string, changes: () => RecordChange[], write: (batch: RecordChangeBatch | null) => Promise<T>): Promise<T> {
    const batch = this.feed === null ? null : await this.feed.begin(projectId, changes)
    try {
      return await write(batch)
    } catch (error) {
      await batch?.failed()
      throw error
    }
  }

  async removed (projectId: string, collection: DataCollection, docs: Array<WithId<Document>>): Promise<void> {
    for (const hook of this.removedHooks) await hook(projectId, collection, docs)
  }

  async updated (projectId: string, collection: DataCollection, ids: string[], changes: Document, before: Array<WithId<Document>>): Promise<void> {
    for (const hook of this.updatedHooks) await hook(projectId, collection, ids, changes, before)
  }
}
