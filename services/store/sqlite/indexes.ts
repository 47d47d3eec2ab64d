import Database from 'better-sqlite3'
import { DuplicateKeyError, IndexNotFoundError, InvalidDocumentError, InvalidIndexError } from '../errors.js'
import type { CreateIndexOptions, Document, Filter, IndexDescription, IndexKey } from '../types.js'
import { decodeDocument, storedValue } from './codec.js'
import type { CollectionMeta, Connection, IndexMeta } from './connection.js'
import { quoteIdentifier, sqlIndexName } from './names.js'
import { KeyRank, anyArrayCondition, keyRankExpression, keyValueExpression } from './paths.js'
import { compileSqlFilter, type FilterContext } from './sql-filter.js'
import { isPlainObject } from '../semantics/values.js'
import { checkDropIndex, existingIndex, indexSpec, parallelArrays } from '../semantics/indexes.js'

export function filterContext (meta: CollectionMeta | undefined, perRow = false): FilterContext {
  return {
    keyed: (path) => meta?.multikey.has(path) ?? false,
    arrayFree: (path) => meta?.multikey.get(path) === false,
    perRow
  }
}

function indexColumns (field: string, direction: number): string[] {
  const order = direction === -1 ? ' DESC' : ''
  if (field === '_id') return ['id' + order]
  const segments = field.split('.')
  return [keyRankExpression(segments) + order, keyValueExpression(segments) + order]
}

export function listIndexes (meta: CollectionMeta | undefined): IndexDescription[] {
  if (meta === undefined) return []
  return [
    { name: '_id_', key: { _id: 1 }, unique: true },
    ...meta.indexes.map((index) => ({
      name: index.name,
      key: { ...index.key },
      unique: index.unique,
      ...(index.partial === null ? {} : { partialFilterExpression: structuredClone(index.partial) })
    }))
  ]
}

/**
 * A partial index's WHERE: each named field's key rank is String's. The rank
 * term is written exactly as a keyed equality or `$in` on a string writes it
 * (sql-filter.ts), which is how SQLite's planner, matching terms by their
 * text, sees that such a query implies the index's WHERE. (`$gte: ''` adds
 * nothing within the String rank: every string is at least ''.)
 */
function partialWhere (partial: Filter | null): string {
  if (partial === null) return ''
  return ' WHERE ' + Object.keys(partial).map((field) => `${keyRankExpression(field.split('.'))} = ${KeyRank.String}`).join(' AND ')
}

export function createIndex (connection: Connection, collection: string, key: IndexKey, options: CreateIndexOptions = {}): string {
  const spec = indexSpec(key, options)
  const { fields, name, unique, partial } = spec
  return connection.write(() => {
    const same = existingIndex(listIndexes(connection.collection(collection)), spec)
    if (same !== null) return same
    let meta = connection.ensureCollection(collection)
    const table = quoteIdentifier(meta.table)
    let arrayFields = 0
    for (const field of fields) {
      if (field === '_id') continue
      const tracked = meta.multikey.get(field)
      if (tracked !== undefined) { if (tracked) arrayFields++; continue }
      const hasArrays = connection.statement(`SELECT 1 FROM ${table} WHERE ${anyArrayCondition(field.split('.'))} LIMIT 1`).pluck().get() !== undefined
      if (hasArrays) arrayFields++
      connection.statement('INSERT INTO _plinth_paths (collection, path, multikey) VALUES (?, ?, ?)').run(collection, field, hasArrays ? 1 : 0)
    }
    if (arrayFields > 1) checkAllParallelArrays(connection, meta, name, fields)
    const sqlName = sqlIndexName(collection, name)
    const columns = fields.flatMap((field) => indexColumns(field, key[field]))
    try {
      connection.db.exec(`CREATE ${unique ? 'UNIQUE ' : ''}INDEX ${quoteIdentifier(sqlName)} ON ${table} (${columns.join(', ')})${partialWhere(partial)}`)
    } catch (error) {
      if (isUniqueViolation(error)) throw firstDuplicate(connection, meta, name, fields)
      throw error
    }
    connection.statement('INSERT INTO _plinth_indexes (collection, name, key, is_unique, sql_name, partial) VALUES (?, ?, ?, ?, ?, ?)')
      .run(collection, name, JSON.stringify(key), unique ? 1 : 0, sqlName, partial === null ? null : JSON.stringify(partial))
    connection.bumpVersion(collection)
    meta = connection.collection(collection) as CollectionMeta
    const index = meta.indexes.find((candidate) => candidate.name === name) as IndexMeta
    if (unique && fields.some((field) => meta.multikey.get(field) === true)) checkAllArrayKeys(connection, meta, index)
    return name
  }, collection)
}

export function dropIndex (connection: Connection, collection: string, name: string): void {
  checkDropIndex(name)
  connection.write(() => {
    const meta = connection.collection(collection)
    const index = meta?.indexes.find((candidate) => candidate.name === name)
    if (meta === undefined || index === undefined) throw new IndexNotFoundError(name)
    connection.db.exec(`DROP INDEX IF EXISTS ${quoteIdentifier(index.sqlName)}`)
    connection.statement('DELETE FROM _plinth_indexes WHERE collection = ? AND name = ?').run(collection, name)
    // A path no index covers is no longer tracked, so its multikey flag would go stale.
    const stillUsed = new Set(meta.indexes.filter((other) => other !== index).flatMap((other) => other.fields))
    for (const field of index.fields) {
      if (!stillUsed.has(field)) connection.statement('DELETE FROM _plinth_paths WHERE collection = ? AND path = ?').run(collection, field)
    }
    connection.bumpVersion(collection)
  }, collection)
}

export function isUniqueViolation (error: unknown): boolean {
  return error instanceof Database.SqliteError && (error.code === 'SQLITE_CONSTRAINT_UNIQUE' || error.code === 'SQLITE_CONSTRAINT_PRIMARYKEY')
}

/** Maps SQLite's unique-constraint error for `doc` onto the index MongoDB would name. */
export function duplicateKeyError (error: unknown, meta: CollectionMeta, doc: Document): DuplicateKeyError | null {
  if (!isUniqueViolation(error)) return null
  const message = (error as Error).message
  const named = /index '(.*)'$/.exec(message)
  if (named !== null) {
    const index = meta.indexes.find((candidate) => candidate.sqlName === named[1])
    if (index !== undefined) return new DuplicateKeyError(meta.name, index.name, keyValue(doc, index.fields))
  }
  if (message.endsWith('.id')) return new DuplicateKeyError(meta.name, '_id_', { _id: doc._id })
  return null
}

function valueAt (doc: Document, field: string): unknown {
  let value: unknown = doc
  for (const segment of field.split('.')) {
    // Own fields only: a field named `constructor` a document lacks is missing, not Object's constructor.
    if (!isPlainObject(value) || !Object.hasOwn(value, segment)) return null
    value = value[segment]
  }
  return value === undefined ? null : value
}

function keyValue (doc: Document, fields: string[]): Record<string, unknown> {
  return Object.fromEntries(fields.map((field) => [field, valueAt(doc, field)]))
}

function hasArrayAlong (doc: Document, field: string): boolean {
  let value: unknown = doc
  for (const segment of field.split('.')) {
    if (!isPlainObject(value)) return false
    value = value[segment]
    if (Array.isArray(value)) return true
  }
  return false
}

/** True when writing `doc` needs more than the row itself: a multikey flag to set or element-wise unique checks. */
export function needsArrayWork (meta: CollectionMeta, doc: Document): boolean {
  for (const [path, multikey] of meta.multikey) if (!multikey && hasArrayAlong(doc, path)) return true
  for (const index of meta.indexes) {
    if (index.unique && index.fields.some((field) => field !== '_id' && (meta.multikey.get(field) === true || hasArrayAlong(doc, field)))) return true
  }
  return false
}

/** Flags the paths a written document turns multikey; queries stop trusting array-free translations for them. */
export function trackArrays (connection: Connection, meta: CollectionMeta, doc: Document): void {
  let changed = false
  for (const [path, multikey] of meta.multikey) {
    if (multikey || !hasArrayAlong(doc, path)) continue
    connection.statement('UPDATE _plinth_paths SET multikey = 1 WHERE collection = ? AND path = ?').run(meta.name, path)
    changed = true
  }
  if (changed) connection.bumpVersion(meta.name)
}

// Index keys as MongoDB generates them: one per array element, `[]` as its own key.
const EMPTY_ARRAY = Symbol('empty-array')

function keysAt (value: unknown, segments: string[], depth: number, out: unknown[]): void {
  if (depth === segments.length) {
    if (!Array.isArray(value)) out.push(value === undefined ? null : value)
    else if (value.length === 0) out.push(EMPTY_ARRAY)
    else out.push(...value)
    return
  }
  if (Array.isArray(value)) {
    const before = out.length
    for (const element of value) if (isPlainObject(element)) keysAt(element, segments, depth, out)
    if (out.length === before) out.push(null)
    return
  }
  if (!isPlainObject(value)) { out.push(null); return }
  keysAt(value[segments[depth]], segments, depth + 1, out)
}

function keyText (value: unknown): string {
  if (value === EMPTY_ARRAY) return 'u'
  if (value === null) return 'z'
  if (typeof value === 'number') return 'n' + String(value)
  if (typeof value === 'string') return 's' + value
  if (typeof value === 'boolean') return 'b' + String(value)
  if (value instanceof Date) return 'd' + String(value.getTime())
  return (Array.isArray(value) ? 'a' : 'o') + JSON.stringify(storedValue(value, 'key'))
}

interface KeyTuple { text: string, values: unknown[] }

function indexTuples (doc: Document, fields: string[]): Map<string, KeyTuple> {
  let tuples: KeyTuple[] = [{ text: '', values: [] }]
  for (const field of fields) {
    const keys: unknown[] = []
    keysAt(doc, field.split('.'), 0, keys)
    tuples = tuples.flatMap((tuple) => keys.map((key) => ({ text: tuple.text + '\u0001' + keyText(key), values: [...tuple.values, key] })))
  }
  return new Map(tuples.map((tuple) => [tuple.text, tuple]))
}

function tupleKeyValue (fields: string[], tuple: KeyTuple): Record<string, unknown> {
  return Object.fromEntries(fields.map((field, i) => [field, tuple.values[i] === EMPTY_ARRAY ? [] : tuple.values[i]]))
}

/**
 * SQLite's unique index compares whole arrays; MongoDB compares each
 * element. For documents with arrays along a unique index's paths, the engine
 * looks for another document sharing any element key itself.
 */
export function checkArrayKeys (connection: Connection, meta: CollectionMeta, doc: Document, ownSeq: number | null): void {
  for (const index of meta.indexes) {
    if (!index.unique) continue
    const paths = index.fields.filter((field) => field !== '_id')
    if (!paths.some((field) => meta.multikey.get(field) === true || hasArrayAlong(doc, field))) continue
    const tuples = indexTuples(doc, index.fields)
    const filter = { $or: [...tuples.values()].map((tuple) => ({ $and: index.fields.map((field, i) => ({ [field]: tuple.values[i] === EMPTY_ARRAY ? [] : tuple.values[i] })) })) }
    const where = compileSqlFilter(filter, filterContext(meta))
    if (where.sql === '0') continue
    const rows = connection.statement(`SELECT doc FROM ${quoteIdentifier(meta.table)} WHERE (${where.sql}) AND seq IS NOT ?`).pluck()
      .iterate(...where.params, ownSeq) as IterableIterator<string>
    for (const json of rows) {
      for (const text of indexTuples(decodeDocument(json), index.fields).keys()) {
        const shared = tuples.get(text)
        if (shared !== undefined) throw new DuplicateKeyError(meta.name, index.name, tupleKeyValue(index.fields, shared))
      }
    }
  }
}

function checkAllArrayKeys (connection: Connection, meta: CollectionMeta, index: IndexMeta): void {
  const seen = new Set<string>()
  const rows = connection.statement(`SELECT doc FROM ${quoteIdentifier(meta.table)}`).pluck().iterate() as IterableIterator<string>
  for (const json of rows) {
    const tuples = indexTuples(decodeDocument(json), index.fields)
    for (const [text, tuple] of tuples) {
      if (seen.has(text)) throw new DuplicateKeyError(meta.name, index.name, tupleKeyValue(index.fields, tuple))
    }
    for (const text of tuples.keys()) seen.add(text)
  }
}

function firstDuplicate (connection: Connection, meta: CollectionMeta, name: string, fields: string[]): DuplicateKeyError {
  const columns = fields.flatMap((field) => indexColumns(field, 1))
  const json = connection.statement(`SELECT doc FROM ${quoteIdentifier(meta.table)} WHERE seq = (SELECT min(seq) FROM ${quoteIdentifier(meta.table)} GROUP BY ${columns.join(', ')} HAVING count(*) > 1 LIMIT 1)`).pluck().get() as string | undefined
  return new DuplicateKeyError(meta.name, name, json === undefined ? {} : keyValue(decodeDocument(json), fields))
}

/** MongoDB cannot index two different arrays of one document in one compound index; neither engine stores such a document. */
export function checkParallelArrays (meta: CollectionMeta, doc: Document): void {
  for (const index of meta.indexes) {
    if (index.fields.length < 2) continue
    const forked = parallelArrays(doc, index.fields)
    if (forked !== null) throw new InvalidDocumentError('document', `Cannot index parallel arrays: '${forked[0]}' and '${forked[1]}' of index '${index.name}' hold different arrays`)
  }
}

function checkAllParallelArrays (connection: Connection, meta: CollectionMeta, name: string, fields: string[]): void {
  const rows = connection.statement(`SELECT doc FROM ${quoteIdentifier(meta.table)}`).pluck().iterate() as IterableIterator<string>
  for (const json of rows) {
    const forked = parallelArrays(decodeDocument(json), fields)
    if (forked !== null) throw new InvalidIndexError(`Cannot build index '${name}': a document holds parallel arrays in '${forked[0]}' and '${forked[1]}'`)
  }
}
