import type { Document } from '../types.js'
import { cloneDecoded } from './codec.js'
import { deepFreeze } from '../../deep-freeze.js'

/**
 * Documents recently read by primary key, valid for one state of the file:
 * the connection drops them whenever it writes or sees another connection's
 * commit, so a hit is exactly what the read would have returned. Each caller
 * gets its own copy, except readers that share. Bounded in entries and in
 * stored size; a full cache drops the oldest entry of the collection it is
 * filling.
 */
const MAX_ENTRIES = 4096
const MAX_DOCUMENT_CHARS = 8192

export class DocumentCache {
  // Per collection, so a lookup hashes the id alone rather than building a combined key.
  private readonly collections = new Map<string, Map<string, Document>>()
  private size = 0

  get (collection: string, id: string): Document | undefined {
    const doc = this.collections.get(collection)?.get(id)
    return doc === undefined ? undefined : cloneDecoded(doc)
  }

  /**
   * The cached instance itself, frozen, for readers that promised not to
   * change it: one instance per document and state, so work derived from it
   * can be remembered by identity.
   */
  shared (collection: string, id: string): Document | undefined {
    const doc = this.collections.get(collection)?.get(id)
    return doc === undefined ? undefined : deepFreeze(doc)
  }

  /** Keeps `doc` itself (the caller must not hand it out) if its stored JSON is small enough. */
  remember (collection: string, id: string, doc: Document, jsonLength: number): boolean {
    if (jsonLength > MAX_DOCUMENT_CHARS) return false
    let documents = this.collections.get(collection)
    if (documents === undefined) {
      documents = new Map()
      this.collections.set(collection, documents)
    }
    if (this.size >= MAX_ENTRIES) this.evictOne(documents)
    const before = documents.size
    documents.set(id, doc)
    this.size += documents.size - before
    return true
  }

  /** Drops the oldest entry of the collection being filled, or of another when that one holds none. */
  private evictOne (filling: Map<string, Document>): void {
    for (const [name, documents] of filling.size > 0 ? [['', filling] as const] : this.collections) {
      if (documents.size === 0) continue
      documents.delete(documents.keys().next().value as string)
      this.size--
      if (documents.size === 0 && documents !== filling) this.collections.delete(name)
      return
    }
  }

  clear (): void {
    if (this.size === 0) return
    this.collections.clear()
    this.size = 0
  }
}
