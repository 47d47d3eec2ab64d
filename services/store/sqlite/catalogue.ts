import type Database from 'better-sqlite3'
import type { Filter, IndexKey, TextIndexSpec } from '../types.js'
import { collectionOfTable, quoteIdentifier, tableName } from './names.js'
import { createTextObjects, dropTextObjects } from './text-objects.js'

export interface IndexMeta {
  name: string
  key: IndexKey
  fields: string[]
  unique: boolean
  sqlName: string
  /** A partial index's filter (the Store's one form: the fields named hold strings), or null. */
  partial: Filter | null
}

export interface CollectionMeta {
  name: string
  table: string
  indexes: IndexMeta[]
  /** Every path some index stores, and whether any document holds an array along it (MongoDB's "multikey"). */
  multikey: Map<string, boolean>
}

type Statement = Database.Statement<unknown[], unknown>

/** The catalogue's own tables, created once per file by whichever connection opens it first. */
export function createCatalogueTables (db: Database.Database): void {
  db.transaction(() => {
    db.exec(`
      CREATE TABLE IF NOT EXISTS _plinth_meta (id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL);
      INSERT OR IGNORE INTO _plinth_meta (id, version) VALUES (1, 0);
      CREATE TABLE IF NOT EXISTS _plinth_indexes (
        collection TEXT NOT NULL, name TEXT NOT NULL, key TEXT NOT NULL, is_unique INTEGER NOT NULL, sql_name TEXT NOT NULL,
        partial TEXT, PRIMARY KEY (collection, name));
      CREATE TABLE IF NOT EXISTS _plinth_paths (
        collection TEXT NOT NULL, path TEXT NOT NULL, multikey INTEGER NOT NULL, PRIMARY KEY (collection, path));
      CREATE TABLE IF NOT EXISTS _plinth_text (collection TEXT PRIMARY KEY, spec TEXT NOT NULL);
    `)
    // A file made before partial indexes: its indexes are all whole ones (NULL).
    const columns = db.prepare("SELECT name FROM pragma_table_info('_plinth_indexes')").pluck().all() as string[]
    if (!columns.includes('partial')) db.exec('ALTER TABLE _plinth_indexes ADD COLUMN partial TEXT')
  }).immediate()
}

/** A row of `_plinth_indexes`, as both the whole catalogue's read and one collection's read take it. */
interface IndexRow { name: string, key: string, is_unique: number, sql_name: string, partial: string | null }

function indexOfRow (row: IndexRow): IndexMeta {
  const key = JSON.parse(row.key) as IndexKey
  const partial = row.partial === null ? null : JSON.parse(row.partial) as Filter
  return { name: row.name, key, fields: Object.keys(key), unique: row.is_unique === 1, sqlName: row.sql_name, partial }
}

/**
 * What a connection knows of the file's collections, indexes and text
 * indexes. The catalogue lives in the file and carries a version that every
 * change bumps, so connections in other processes notice index and multikey
 * changes inside their own transaction before they rely on them. Every method
 * runs inside the connection's transaction.
 */
export class Catalogue {
  private version = -1
  private collections = new Map<string, CollectionMeta>()
  private texts = new Map<string, TextIndexSpec>()

  constructor (private readonly db: Database.Database, private readonly statement: (sql: string) => Statement) {}

  /** Read again at the next refresh: what was read inside a transaction that did not commit may never have existed. */
  invalidate (): void {
    this.version = -1
  }

  get stale (): boolean {
    return this.version === -1
  }

  collection (name: string): CollectionMeta | undefined {
    return this.collections.get(name)
  }

  textSpec (name: string): TextIndexSpec | undefined {
    return this.texts.get(name)
  }

  names (): string[] {
    return [...this.collections.keys()]
  }

  /** Reloads the catalogue when another connection (or this one) changed it. */
  refresh (): void {
    const version = this.statement('SELECT version FROM _plinth_meta WHERE id = 1').pluck().get() as number
    if (version !== this.version) this.load(version)
  }

  /**
   * Called inside the write transaction that changed the catalogue. When the
   * change touched one collection and this connection held the version it
   * replaces, only that collection is read again: an app's first start
   * declares a few hundred indexes one by one, and reading the whole
   * catalogue after each was most of its start-up.
   */
  bumpVersion (collection?: string): void {
    const held = this.version
    this.statement('UPDATE _plinth_meta SET version = version + 1 WHERE id = 1').run()
    const version = this.statement('SELECT version FROM _plinth_meta WHERE id = 1').pluck().get() as number
    if (collection !== undefined && held !== -1 && version === held + 1) this.loadCollection(collection, version)
    else if (version !== this.version) this.load(version)
  }

  ensureCollection (name: string): CollectionMeta {
    const existing = this.collections.get(name)
    if (existing !== undefined) return existing
    this.db.exec(`CREATE TABLE IF NOT EXISTS ${quoteIdentifier(tableName(name))} (seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, doc TEXT NOT NULL)`)
    // A collection dropped and written again keeps its declared text index.
    const text = this.texts.get(name)
    if (text !== undefined) createTextObjects(this.db, name, text)
    this.bumpVersion(name)
    return this.collections.get(name) as CollectionMeta
  }

  dropCollection (name: string): boolean {
    if (this.collections.get(name) === undefined) return false
    this.db.exec(`DROP TABLE IF EXISTS ${quoteIdentifier(tableName(name))}`)
    if (this.texts.has(name)) dropTextObjects(this.db, name)
    this.statement('DELETE FROM _plinth_indexes WHERE collection = ?').run(name)
    this.statement('DELETE FROM _plinth_paths WHERE collection = ?').run(name)
    this.bumpVersion(name)
    return true
  }

  /** `load` narrowed to one collection, for a version only this connection's transaction moved (every other one is as read). */
  private loadCollection (name: string, version: number): void {
    const table = tableName(name)
    const exists = this.statement("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ?").pluck().get(table) !== undefined
    if (exists) {
      const meta: CollectionMeta = { name, table, indexes: [], multikey: new Map() }
      const indexes = this.statement('SELECT name, key, is_unique, sql_name, partial FROM _plinth_indexes WHERE collection = ? ORDER BY rowid').all(name) as IndexRow[]
      meta.indexes = indexes.map(indexOfRow)
      const paths = this.statement('SELECT path, multikey FROM _plinth_paths WHERE collection = ?').all(name) as Array<{ path: string, multikey: number }>
      for (const row of paths) meta.multikey.set(row.path, row.multikey === 1)
      this.collections.set(name, meta)
    } else {
      this.collections.delete(name)
    }
    const spec = this.statement('SELECT spec FROM _plinth_text WHERE collection = ?').pluck().get(name) as string | undefined
    if (spec === undefined) this.texts.delete(name)
    else this.texts.set(name, JSON.parse(spec) as TextIndexSpec)
    this.version = version
  }

  private load (version: number): void {
    const collections = new Map<string, CollectionMeta>()
    const tables = this.statement("SELECT name FROM sqlite_schema WHERE type = 'table' AND substr(name, 1, 2) = 'c|'").pluck().all() as string[]
    for (const table of tables) {
      const name = collectionOfTable(table)
      if (name !== null) collections.set(name, { name, table, indexes: [], multikey: new Map() })
    }
    const indexes = this.statement('SELECT collection, name, key, is_unique, sql_name, partial FROM _plinth_indexes ORDER BY rowid').all() as Array<IndexRow & { collection: string }>
    for (const row of indexes) collections.get(row.collection)?.indexes.push(indexOfRow(row))
    const paths = this.statement('SELECT collection, path, multikey FROM _plinth_paths').all() as Array<{ collection: string, path: string, multikey: number }>
    for (const row of paths) collections.get(row.collection)?.multikey.set(row.path, row.multikey === 1)
    const texts = this.statement('SELECT collection, spec FROM _plinth_text').all() as Array<{ collection: string, spec: string }>
    this.texts = new Map(texts.map((row) => [row.collection, JSON.parse(row.spec) as TextIndexSpec]))
    this.collections = collections
    this.version = version
  }
}
