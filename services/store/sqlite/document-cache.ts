import type { Document } from '../types.js'
import { cloneDecoded } from './codec.js'

/**
 * Documents recently read by primary key, valid for one state of the file:
 * the connection drops them whenever it writes or sees another connection's
 * commit, so a hit is exactly what the read would have returned. Each caller
 * gets its own copy. Bounded in entries and in stored size; oldest go first.
 */
const MAX_ENTRIES = 4096
const MAX_DOCUMENT_CHARS = 8192

export class DocumentCache {
  private readonly entries = new Map<string, Document>()

  private static key (collection: string, id: string): string {
    return `${collection}\u0000${id}`
  }

  get (collection: string, id: string): Document | undefined {
    const doc = this.entries.get(DocumentCache.key(collection, id))
    return doc === undefined ? undefined : cloneDecoded(doc)
  }

  /** Keeps `doc` itself (the caller must not hand it out) if its stored JSON is small enough. */
  remember (collection: string, id: string, doc: Document, jsonLength: number): boolean {
    if (jsonLength > MAX_DOCUMENT_CHARS) return false
    if (this.entries.size >= MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value as string)
    this.entries.set(DocumentCache.key(collection, id), doc)
    return true
  }

  clear (): void {
    if (this.entries.size > 0) this.entries.clear()
  }
}
