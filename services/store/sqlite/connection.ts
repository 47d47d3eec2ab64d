import { realpathSync } from 'node:fs'
import Database from 'better-sqlite3'
import type { Document, TextIndexSpec } from '../types.js'
import { DocumentCache } from './document-cache.js'
import { cloneDecoded, decodeDocument } from './codec.js'
import { BoundedMap } from '../../cache/bounded-map.js'
import { keepPrivate } from './private-file.js'
import { attachCheckpointer, useWal, type CheckpointOptions } from './checkpointer.js'
import { Catalogue, createCatalogueTables, type CollectionMeta } from './catalogue.js'
import {
  beginImmediate, DEFAULT_BUSY_TIMEOUT_MS, joinFile, leaveFile, OPEN_BUSY_TIMEOUT_MS, retryWhileBusy, SYNC_BUSY_TIMEOUT_MS, yieldLock, type TurnHolder
} from './write-lock.js'

export type { CollectionMeta, IndexMeta } from './catalogue.js'

type Statement = Database.Statement<unknown[], unknown>

const STATEMENT_CACHE_SIZE = 500

/**
 * One better-sqlite3 connection plus what the engine caches about the file:
 * prepared statements, the collection/index catalogue (catalogue.ts) and the
 * documents read in the current state of the file (document-cache.ts).
 */
export class Connection implements TurnHolder {
  readonly db: Database.Database
  private readonly statements = new BoundedMap<string, Statement>(STATEMENT_CACHE_SIZE)
  private readonly catalogue: Catalogue
  private transaction: 'none' | 'read' | 'write' = 'none'
  private turn: 'none' | 'read' | 'write' = 'none'
  private committed: Array<{ resolve: () => void, reject: (error: unknown) => void }> = []
  private dataVersion = -1
  private readonly documents = new DocumentCache()
  private readonly fileKey: string | null = null
  private readonly busyTimeoutMs: number
  private readonly detachCheckpointer: (() => Promise<void>) | null = null

  constructor (file: string, options: { busyTimeoutMs?: number, checkpoints?: CheckpointOptions } = {}) {
    this.busyTimeoutMs = options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS
    if (file !== ':memory:') {
      keepPrivate(file)
      this.fileKey = realpathSync(file)
      yieldLock(this.fileKey, this)
    }
    // Later writes wait for another process's lock in `writing`.
    this.db = new Database(file, { timeout: OPEN_BUSY_TIMEOUT_MS })
    this.catalogue = new Catalogue(this.db, (sql) => this.statement(sql))
    try {
      if (this.fileKey === null) useWal(this.db, false)
      else this.detachCheckpointer = attachCheckpointer(this.fileKey, this.db, options.checkpoints)
      this.migrate()
    } catch (error) {
      // Locked, or no database file: this connection never opens, so it keeps neither the file nor its checkpointer.
      this.db.close()
      void this.detachCheckpointer?.()
      throw error
    }
    if (this.fileKey !== null) joinFile(this.fileKey, this)
  }

  private migrate (): void {
    createCatalogueTables(this.db)
    this.db.pragma(`busy_timeout = ${SYNC_BUSY_TIMEOUT_MS}`)
  }

  get open (): boolean {
    return this.db.open
  }

  statement (sql: string): Statement {
    return this.statements.remember(sql, () => this.db.prepare(sql))
  }

  collection (name: string): CollectionMeta | undefined {
    return this.catalogue.collection(name)
  }

  /** The text index declared on a collection (text-index.ts), whether or not its table exists now. */
  textSpec (name: string): TextIndexSpec | undefined {
    return this.catalogue.textSpec(name)
  }

  collectionNames (): string[] {
    return this.catalogue.names()
  }

  /**
   * Reads share one read transaction per event-loop iteration (a "turn"): the
   * lock round trips of a WAL snapshot are paid once for every request handled
   * in that iteration, and each request still reads a snapshot taken after it
   * arrived. Writes end the turn first. At its start, PRAGMA data_version tells
   * whether another connection committed since the last turn, which is when
   * the catalogue is re-read and the document cache dropped.
   */
  beginTurn (): void {
    if (this.turn !== 'none' || this.transaction !== 'none') return
    this.statement('BEGIN').run()
    this.turn = 'read'
    setImmediate(this.endTurn)
    this.startSnapshot()
  }

  /**
   * Group commit for single inserts: the inserts of one turn share one write
   * transaction, committed at the end of the turn, so concurrent creates pay
   * for one WAL commit instead of one each. `insert` runs now and reports
   * whether it inserted; if so, the promise settles when the turn commits (an
   * insert is acknowledged only once it is durable). Null when the caller
   * must take its own path: inside an explicit transaction, or when `insert`
   * declined.
   */
  groupInsert (insert: () => boolean, collection: string): Promise<void> | null {
    if (this.transaction !== 'none') return null
    this.joinWriteTurn()
    let inserted: boolean
    try {
      inserted = insert()
    } catch (error) {
      // SQLite rolls the whole transaction back on some failures (disk full, I/O): the turn's other inserts went with it.
      if (!this.db.inTransaction) this.failTurn(new Error('The group commit was rolled back by an earlier failure in it', { cause: error }))
      throw error
    }
    if (!inserted) return null
    // A new document changes no cached one, so the collection's cached documents stay; its cached pages may lack it.
    this.documents.rowsAdded(collection)
    return this.acknowledgedAtCommit()
  }

  /**
   * Group commit for every other single write call (an update, a delete, an
   * insertMany): `fn` runs now, inside the turn's write transaction, in a
   * savepoint of its own, so a failure of `fn` undoes its own changes and
   * nothing else of the turn, and the call is still all or nothing. The
   * result is handed out with a promise that settles when the turn commits:
   * the caller acknowledges the write only then. Concurrent requests' writes
   * (a create's number, an item's update, a job's claim) share one WAL commit
   * per turn rather than one transaction each, which also ended the turn's
   * group of inserts early. Null inside an explicit transaction: the caller
   * takes `write`.
   */
  groupWrite<T> (fn: () => T, collection: string): { result: T, committed: Promise<void> } | null {
    if (this.transaction !== 'none') return null
    this.joinWriteTurn()
    this.statement('SAVEPOINT group_write').run()
    this.transaction = 'write'
    try {
      const result = fn()
      this.statement('RELEASE group_write').run()
      return { result, committed: this.acknowledgedAtCommit() }
    } catch (error) {
      if (this.db.inTransaction) {
        this.statement('ROLLBACK TO group_write').run()
        this.statement('RELEASE group_write').run()
        // The catalogue may hold a change (a collection created on first write) that was just undone.
        this.catalogue.invalidate()
        this.refresh()
      } else {
        // SQLite rolled the whole transaction back (disk full, I/O): the turn's other writes went with it.
        this.failTurn(new Error('The group commit was rolled back by an earlier failure in it', { cause: error }))
      }
      throw error
    } finally {
      this.transaction = 'none'
      // Documents cached before may no longer be what the file holds (and after a failed turn, none is).
      this.changed(collection)
    }
  }

  /** Opens the turn's write transaction (ending a read turn), or joins the one open. */
  private joinWriteTurn (): void {
    if (this.turn === 'write') return
    const scheduled = this.turn === 'read'
    if (scheduled) {
      this.statement('COMMIT').run()
      this.turn = 'none'
    }
    this.beginImmediate()
    this.turn = 'write'
    if (!scheduled) setImmediate(this.endTurn)
    this.startSnapshot()
  }

  private acknowledgedAtCommit (): Promise<void> {
    return new Promise((resolve, reject) => { this.committed.push({ resolve, reject }) })
  }

  /**
   * Only another connection's commit moves data_version, and only a commit
   * or a rollback can change the catalogue, so the catalogue is re-read just
   * then: most turns cost one pragma.
   */
  private startSnapshot (): void {
    const dataVersion = this.statement('PRAGMA data_version').pluck().get() as number
    if (dataVersion !== this.dataVersion || this.catalogue.stale) {
      this.dataVersion = dataVersion
      this.refresh()
      this.changed()
    }
  }

  readonly endTurn = (): void => {
    if (this.turn === 'none') return
    if (this.turn === 'write' && this.db.open && !this.db.inTransaction) {
      this.failTurn(new Error('The group commit was rolled back before it could commit'))
      return
    }
    this.turn = 'none'
    const waiting = this.committed
    this.committed = []
    try {
      if (this.db.open && this.db.inTransaction) this.statement('COMMIT').run()
    } catch (error) {
      this.rollBackQuietly()
      this.forgetCaches()
      for (const insert of waiting) insert.reject(error)
      return
    }
    for (const insert of waiting) insert.resolve()
  }

  /** Ends a turn whose transaction is lost: nothing in it was committed, so none of its inserts is acknowledged. */
  private failTurn (error: Error): void {
    this.turn = 'none'
    const waiting = this.committed
    this.committed = []
    this.rollBackQuietly()
    this.forgetCaches()
    for (const insert of waiting) insert.reject(error)
  }

  private rollBackQuietly (): void {
    try {
      if (this.db.open && this.db.inTransaction) this.statement('ROLLBACK').run()
    } catch {
      // Nothing more to undo: SQLite has already ended the transaction.
    }
  }

  /** What this connection read inside a transaction that did not commit may describe data that never existed. */
  private forgetCaches (): void {
    this.catalogue.invalidate()
    this.changed()
  }

  /** Whatever was read before may differ now (in `collection`, or anywhere when none is named): its cached documents go. */
  private changed (collection?: string): void {
    if (collection === undefined) this.documents.clear()
    else this.documents.clearCollection(collection)
  }

  /** Whether reads can be answered from the document cache now: inside a turn, outside a write. */
  readsCachedDocuments (): boolean {
    return this.turn !== 'none' && this.transaction !== 'write'
  }

  /** A copy (or, shared, the frozen instance) of a document read earlier in this state of the file. */
  cachedDocument (collection: string, id: string, shared = false): Document | undefined {
    if (!this.readsCachedDocuments()) return undefined
    return shared ? this.documents.shared(collection, id) : this.documents.get(collection, id)
  }

  /** The row numbers a shared query answered in this state of the file (DocumentCache.page), or undefined. */
  cachedPage (collection: string, key: string): readonly number[] | undefined {
    return this.readsCachedDocuments() ? this.documents.page(collection, key) : undefined
  }

  rememberPage (collection: string, key: string, seqs: readonly number[]): void {
    if (this.readsCachedDocuments()) this.documents.rememberPage(collection, key, seqs)
  }

  /** The same, for the document stored in row `seq`. */
  cachedRow (collection: string, seq: number, shared = false): Document | undefined {
    if (!this.readsCachedDocuments()) return undefined
    return this.documents.row(collection, seq, shared)
  }

  /**
   * The shared instances of the documents in rows `seqs` read earlier in this
   * state of the file, into `docs`; the positions not cached. Only where
   * readsCachedDocuments() holds, which the caller checked for the whole read.
   */
  cachedSharedRows (collection: string, seqs: readonly number[], docs: Array<Document | undefined>): number[] {
    return this.documents.sharedRows(collection, seqs, docs)
  }

  /**
   * The document a row holds: a copy of the cached one when it was read
   * before in this state of the file (or, for a `shared` read, the cached
   * instance itself, frozen), else decoded and offered to the cache. Never
   * cached inside a write, whose own changes the cache does not follow.
   */
  rowDocument (collection: string, id: string, seq: number, json: string, shared = false): Document {
    if (!this.readsCachedDocuments()) return decodeDocument(json)
    const cached = this.documents.row(collection, seq, shared)
    if (cached !== undefined) return cached
    const doc = decodeDocument(json)
    if (!this.documents.remember(collection, id, seq, doc, json.length)) return doc
    return shared ? doc : cloneDecoded(doc)
  }

  /** A read that must see one consistent snapshot of catalogue and data. */
  read<T> (fn: () => T): T {
    if (this.transaction !== 'none') return fn()
    this.beginTurn()
    this.transaction = 'read'
    try {
      return fn()
    } finally {
      this.transaction = 'none'
    }
  }

  /** BEGIN IMMEDIATE takes the write lock up front, so a read-modify-write cannot interleave with another process's. */
  write<T> (fn: () => T, collection?: string): T {
    if (this.transaction === 'write') {
      // Nested in another write: its collection is marked changed too, whichever the outer write names.
      try {
        return fn()
      } finally {
        this.changed(collection)
      }
    }
    if (this.transaction === 'read') throw new Error('A write cannot start inside a read transaction')
    this.endTurn()
    this.beginImmediate()
    this.transaction = 'write'
    try {
      this.refresh()
      const result = fn()
      this.statement('COMMIT').run()
      return result
    } catch (error) {
      if (this.db.inTransaction) this.statement('ROLLBACK').run()
      // The cached catalogue may describe changes that were just rolled back.
      this.catalogue.invalidate()
      throw error
    } finally {
      this.transaction = 'none'
      // Whatever fn changed (or rolled back), documents cached before it may no longer be what the file holds.
      this.changed(collection)
    }
  }

  /**
   * `write` (or any call of this connection that takes the write lock:
   * `groupInsert`), retried while the lock is held elsewhere until the busy
   * timeout (write-lock.ts).
   */
  async writing<T> (attempt: () => T): Promise<T> {
    return await retryWhileBusy(attempt, this.busyTimeoutMs)
  }

  private beginImmediate (): void {
    if (this.fileKey !== null) yieldLock(this.fileKey, this)
    beginImmediate(() => this.statement('BEGIN IMMEDIATE').run())
  }

  /** Commits the group-commit turn this connection holds the write lock for, if any (a sibling is about to write). */
  commitWriteTurn (): void {
    if (this.turn === 'write') this.endTurn()
  }

  /** Called inside a transaction: reloads the catalogue when another connection (or this one) changed it. */
  refresh (): void {
    this.catalogue.refresh()
  }

  /** Records a catalogue change made in the current write transaction (to `collection` alone, when given). */
  bumpVersion (collection?: string): void {
    this.catalogue.bumpVersion(collection)
  }

  /** The collection's table, created on first write as MongoDB creates collections implicitly. */
  ensureCollection (name: string): CollectionMeta {
    return this.catalogue.ensureCollection(name)
  }

  dropCollection (name: string): boolean {
    return this.catalogue.dropCollection(name)
  }

  /** Settles once the file's checkpointer thread has exited, when this was the file's last connection in the process. */
  async close (): Promise<void> {
    if (!this.db.open) return
    this.endTurn()
    if (this.fileKey !== null) leaveFile(this.fileKey, this)
    this.statements.clear()
    this.db.close()
    await this.detachCheckpointer?.()
  }
}
