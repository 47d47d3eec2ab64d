import { createHash } from 'node:crypto'
import type { IndexKey, Store, StoreCollection } from '../store/types.js'
import { MAX_INDEXES } from '../store/semantics/indexes.js'
import { projectCollectionName } from '../projects/naming.js'
import { BUILT_IN_ORDERS, type DefinitionSpec } from './definition-validation.js'

export interface WantedIndex { name: string, key: IndexKey, unique: boolean, label: string }

/** A definition marked with this has its built-in orders' indexes; bumped when those orders change, so start-up makes the new ones. */
export const BUILT_IN_ORDERS_VERSION = 1

export interface StartLog { warn: (details: object, message: string) => void }

/** Indexes this service made on a records collection start with it; it never touches the others. */
export const DEFINITION_INDEX_PREFIX = 'def_'
// The embedded engine refuses index names over 120 characters.
const MAX_INDEX_NAME = 100

/** `def_u_slug`, `def_i_author,-createdAt`: kind and key, so the same wish always gets the same name. */
export function definitionIndexName (key: IndexKey, unique: boolean): string {
  const fields = Object.entries(key).map(([field, direction]) => direction === -1 ? `-${field}` : field).join(',')
  const kind = `${DEFINITION_INDEX_PREFIX}${unique ? 'u' : 'i'}_`
  if (kind.length + fields.length <= MAX_INDEX_NAME) return kind + fields
  return `${kind}#${createHash('sha256').update(fields).digest('hex').slice(0, 32)}`
}

export function sameKey (a: IndexKey, b: IndexKey): boolean {
  return JSON.stringify(a) === JSON.stringify(b)
}

/** Unique fields and declared indexes, merged by key: one Store index per key, unique if any wish says so. */
export function wantedIndexes (spec: Pick<DefinitionSpec, 'fields' | 'indexes'>): WantedIndex[] {
  const byKey = new Map<string, { key: IndexKey, unique: boolean }>()
  const want = (key: IndexKey, unique: boolean): void => {
    const id = JSON.stringify(key)
    byKey.set(id, { key, unique: unique || byKey.get(id)?.unique === true })
  }
  for (const field of spec.fields) if (field.unique === true) want({ [field.name]: 1 }, true)
  for (const index of [...BUILT_IN_ORDERS, ...spec.indexes]) {
    want(Object.fromEntries(index.fields.map((entry) => entry.startsWith('-') ? [entry.slice(1), -1] : [entry, 1])), index.unique === true)
  }
  return [...byKey.values()].map(({ key: declared, unique }) => {
    const names = Object.keys(declared)
    // Lists always end their sort with the id, so a plain index carries it last: equality on the declared fields
    // then reads records already in page order instead of sorting every match.
    const key: IndexKey = unique || Object.hasOwn(declared, '_id') ? declared : { ...declared, _id: 1 }
    const label = names.length === 1 ? `"${names[0]}"` : `(${names.map((name) => `"${name}"`).join(', ')})`
    return { key, unique, name: definitionIndexName(key, unique), label }
  })
}

/**
 * Collections defined before the built-in orders were indexed get those
 * indexes at the first start after the upgrade (plain indexes on dates, which
 * no record can refuse), and their definitions are marked so that later starts
 * leave them be. A collection holding too many indexes of its own for two more
 * (the limit allowed 63 then) is left as it is: MongoDB would refuse the
 * 65th, and the server would not start. Its newest-first lists are sorted
 * rather than read from an index, and each start says so until a change of
 * its definition makes room (validation now keeps that room).
 */
export async function backfillBuiltInOrders (store: Store, definitions: StoreCollection<{ projectId: string, name: string, builtInOrders?: number }>, log: StartLog): Promise<void> {
  const builtIns = wantedIndexes({ fields: [], indexes: [] })
  for (const def of await definitions.find({ builtInOrders: { $ne: BUILT_IN_ORDERS_VERSION } }, { projection: { projectId: 1, name: 1 } }).toArray()) {
    const records = store.collection(projectCollectionName(def.projectId, def.name))
    const existing = await records.listIndexes()
    const missing = builtIns.filter((want) => !existing.some((index) => index.name === want.name || sameKey(index.key, want.key)))
    if (existing.length + missing.length > MAX_INDEXES) {
      log.warn({ projectId: def.projectId, collection: def.name, indexes: existing.length }, `collection "${def.name}" has no room for its newest-first indexes (createdAt, updatedAt): a collection holds at most ${MAX_INDEXES} indexes; its newest-first lists are sorted until some of its declared indexes or unique fields go`)
      continue
    }
    for (const want of missing) await records.createIndex(want.key, { name: want.name, unique: want.unique })
    await definitions.updateOne({ _id: def._id }, { $set: { builtInOrders: BUILT_IN_ORDERS_VERSION } })
  }
}
