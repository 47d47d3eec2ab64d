/**
 * Stored JSON of documents recently read by primary key, valid for one state
 * of the file: the connection drops it whenever it writes or sees another
 * connection's commit, so a hit is exactly what the read would have returned.
 * Bounded in entries and in document size; oldest entries go first.
 */
const MAX_ENTRIES = 4096
const MAX_DOCUMENT_CHARS = 8192

export class DocumentCache {
  private readonly entries = new Map<string, string>()

  private static key (collection: string, id: string): string {
    return `${collection}\u0000${id}`
  }

  get (collection: string, id: string): string | undefined {
    return this.entries.get(DocumentCache.key(collection, id))
  }

  remember (collection: string, id: string, json: string): void {
    if (json.length > MAX_DOCUMENT_CHARS) return
    if (this.entries.size >= MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value as string)
    this.entries.set(DocumentCache.key(collection, id), json)
  }

  clear (): void {
    if (this.entries.size > 0) this.entries.clear()
  }
}
