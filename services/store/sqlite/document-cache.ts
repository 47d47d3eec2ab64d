import type { Document } from '../types.js'
import { cloneDecoded } from './codec.js'
import { deepFreeze } from '../../deep-freeze.js'

/**
 * Documents recently read, valid for one state of the file: the connection
 * drops them whenever it writes or sees another connection's commit, so a
 * hit is exactly what the read would have returned. Each entry is found by
 * its id (primary-key reads) or by its row number (query pages, which read
 * row numbers from an index: integers cost less to carry out of SQLite and to
 * look up than id strings). Entries are frozen once, when kept; private
 * readers get copies, readers that share get the instance itself. Bounded in
 * entries and in stored size; a full cache drops the oldest entry of the
 * collection it is filling.
 */
const MAX_ENTRIES = 4096
const MAX_DOCUMENT_CHARS = 8192

interface Entry { id: string, seq: number, doc: Document }

class CollectionDocuments {
  readonly byId = new Map<string, Entry>()
  readonly bySeq = new Map<number, Entry>()

  delete (entry: Entry): void {
    this.byId.delete(entry.id)
    this.bySeq.delete(entry.seq)
  }
}

export class DocumentCache {
  private readonly collections = new Map<string, CollectionDocuments>()
  private size = 0

  /** A private copy of the document with this id. */
  get (collection: string, id: string): Document | undefined {
    const entry = this.collections.get(collection)?.byId.get(id)
    return entry === undefined ? undefined : cloneDecoded(entry.doc)
  }

  /**
   * The cached instance itself, frozen, for readers that promised not to
   * change it: one instance per document and state, so work derived from it
   * can be remembered by identity.
   */
  shared (collection: string, id: string): Document | undefined {
    return this.collections.get(collection)?.byId.get(id)?.doc
  }

  /** The document stored in row `seq`: shared as above, or a private copy. */
  row (collection: string, seq: number, shared: boolean): Document | undefined {
    const entry = this.collections.get(collection)?.bySeq.get(seq)
    if (entry === undefined) return undefined
    return shared ? entry.doc : cloneDecoded(entry.doc)
  }

  /** Keeps `doc` itself, frozen (the caller must hand out copies of it), if its stored JSON is small enough. */
  remember (collection: string, id: string, seq: number, doc: Document, jsonLength: number): boolean {
    if (jsonLength > MAX_DOCUMENT_CHARS) return false
    let documents = this.collections.get(collection)
    if (documents === undefined) {
      documents = new CollectionDocuments()
      this.collections.set(collection, documents)
    }
    const replaced = documents.byId.get(id)
    if (replaced !== undefined) {
      documents.delete(replaced)
      this.size--
    }
    if (this.size >= MAX_ENTRIES) this.evictOne(documents)
    const entry: Entry = { id, seq, doc: deepFreeze(doc) }
    documents.byId.set(id, entry)
    documents.bySeq.set(seq, entry)
    this.size++
    return true
  }

  /** Drops the oldest entry of the collection being filled, or of another when that one holds none. */
  private evictOne (filling: CollectionDocuments): void {
    for (const [name, documents] of filling.byId.size > 0 ? [['', filling] as const] : this.collections) {
      const oldest = documents.byId.values().next().value
      if (oldest === undefined) continue
      documents.delete(oldest)
      this.size--
      if (documents.byId.size === 0 && documents !== filling) this.collections.delete(name)
      return
    }
  }

  clearCollection (collection: string): void {
    const documents = this.collections.get(collection)
    if (documents === undefined) return
    this.size -= documents.byId.size
    this.collections.delete(collection)
  }

  clear (): void {
    if (this.size === 0) return
    this.collections.clear()
    this.size = 0
  }
}
