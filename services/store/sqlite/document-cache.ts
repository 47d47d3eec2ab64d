import type { Document } from '../types.js'
import { cloneDecoded } from './codec.js'
import { deepFreeze } from '../../platform/deep-freeze.js'
import { BoundedMap } from '../../cache/bounded-map.js'

/**
 * Documents recently read, valid for one state of the file: the connection
 * drops a collection's whenever it writes to it, and all of them when it sees
 * another connection's commit, so a hit is exactly what the read would have
 * returned. Each is found by its id (primary-key reads) or by its row number
 * (query pages, which read row numbers from an index: integers cost less to
 * carry out of SQLite and to look up than id strings). Entries are frozen
 * once, when kept; private readers get copies, readers that share get the
 * instance itself, one per document and state, so what is derived from it can
 * be remembered by identity (FrozenMemo).
 *
 * Which entries stay is the BoundedMap's decision, by count and by the
 * characters of stored JSON together; the per-collection maps are
 * indexes into it, pruned as it evicts. A dropped collection's entries leave
 * its indexes at once and the BoundedMap as they age out, never hit again.
 */
const MAX_ENTRIES = 4096
/**
 * What is kept is bounded by the stored JSON of its documents together, 32 Mi
 * characters: the bound the cache always had (4096 documents of at most 8 Ki
 * characters each), now spent on whatever documents are read rather than
 * reserved in equal slices. A large document read often (a served DNS zone)
 * is then kept like a small one, which matters most for it: parsing and
 * freezing it again costs in proportion to its size, and what is derived from
 * it (FrozenMemo) is lost with it. One document may take at most 1/64 of the
 * budget, so a few large ones cannot push out everything else.
 */
const MAX_TOTAL_CHARS = MAX_ENTRIES * 8192
const MAX_DOCUMENT_CHARS = MAX_TOTAL_CHARS / 64

/**
 * Pages of row numbers a shared query answered (selectDocuments), each valid
 * while its collection is unchanged: kept at most this many, weighed by their
 * rows, so a page costs a few hundred bytes.
 */
const MAX_PAGES = 512
const MAX_PAGE_ROWS = MAX_PAGES * 64

interface Entry { collection: string, id: string, seq: number, doc: Document }

interface Page { collection: string, made: number, seqs: readonly number[] }

interface Indexes { byId: Map<string, Entry>, bySeq: Map<number, Entry> }

export class DocumentCache {
  private collections = new Map<string, Indexes>()
  private readonly kept: BoundedMap<Entry, true>
  private readonly pages: BoundedMap<string, Page>
  /**
   * A page is valid when made after its collection's last change and the last
   * change of everything: one counter stamps both, so forgetting a
   * collection's pages costs one map write, not a walk of them.
   */
  private stamp = 0
  private allChangedAt = 0
  private readonly changedAt = new Map<string, number>()

  constructor (capacity = MAX_ENTRIES, private readonly maxChars = MAX_TOTAL_CHARS, private readonly maxDocumentChars = MAX_DOCUMENT_CHARS, pages = MAX_PAGES, pageRows = MAX_PAGE_ROWS) {
    this.kept = new BoundedMap(capacity, (entry) => { this.unindex(entry) }, maxChars)
    this.pages = new BoundedMap(pages, undefined, pageRows)
  }

  /** The stored JSON characters of the documents kept, together. */
  get chars (): number {
    return this.kept.weight
  }

  /** A private copy of the document with this id. */
  get (collection: string, id: string): Document | undefined {
    const entry = this.hit(this.collections.get(collection)?.byId.get(id))
    return entry === undefined ? undefined : cloneDecoded(entry.doc)
  }

  /** The cached instance itself, frozen, for readers that promised not to change it. */
  shared (collection: string, id: string): Document | undefined {
    return this.hit(this.collections.get(collection)?.byId.get(id))?.doc
  }

  /** The document stored in row `seq`: shared as above, or a private copy. */
  row (collection: string, seq: number, shared: boolean): Document | undefined {
    const entry = this.hit(this.collections.get(collection)?.bySeq.get(seq))
    if (entry === undefined) return undefined
    return shared ? entry.doc : cloneDecoded(entry.doc)
  }

  /** The shared instances of the documents in rows `seqs`, into `docs` (same positions); the positions not cached. */
  sharedRows (collection: string, seqs: readonly number[], docs: Array<Document | undefined>): number[] {
    const bySeq = this.collections.get(collection)?.bySeq
    const missing: number[] = []
    for (let i = 0; i < seqs.length; i++) {
      const entry = bySeq?.get(seqs[i])
      if (entry === undefined) missing.push(i)
      else docs[i] = this.hit(entry)?.doc
    }
    return missing
  }

  /** Keeps `doc` itself, frozen (the caller must hand out copies of it), if its stored JSON is small enough. */
  remember (collection: string, id: string, seq: number, doc: Document, jsonLength: number): boolean {
    if (jsonLength > this.maxDocumentChars || jsonLength > this.maxChars || this.kept.capacity <= 0) return false
    const replaced = this.collections.get(collection)?.byId.get(id)
    if (replaced !== undefined) {
      this.kept.delete(replaced)
      this.unindex(replaced)
    }
    let indexes = this.collections.get(collection)
    if (indexes === undefined) {
      indexes = { byId: new Map(), bySeq: new Map() }
      this.collections.set(collection, indexes)
    }
    const entry: Entry = { collection, id, seq, doc: deepFreeze(doc) }
    indexes.byId.set(id, entry)
    indexes.bySeq.set(seq, entry)
    this.kept.set(entry, true, jsonLength)
    return true
  }

  /** The row numbers a query (named by `key`: its SQL, values, order, skip and limit) answered in this state of the collection. */
  page (collection: string, key: string): readonly number[] | undefined {
    const page = this.pages.get(`${collection}\u0000${key}`)
    if (page === undefined || page.made <= this.allChangedAt || page.made <= (this.changedAt.get(collection) ?? 0)) return undefined
    return page.seqs
  }

  /** Keeps the row numbers a query answered; the documents stay in the cache's own entries, found by row. */
  rememberPage (collection: string, key: string, seqs: readonly number[]): void {
    if (this.pages.capacity <= 0) return
    this.pages.set(`${collection}\u0000${key}`, { collection, made: ++this.stamp, seqs: Object.freeze([...seqs]) }, Math.max(1, seqs.length))
  }

  /** A row was added: no cached document changed, but a cached page may now miss it. */
  rowsAdded (collection: string): void {
    this.changedAt.set(collection, ++this.stamp)
  }

  clearCollection (collection: string): void {
    this.collections.delete(collection)
    this.changedAt.set(collection, ++this.stamp)
  }

  clear (): void {
    this.allChangedAt = ++this.stamp
    this.changedAt.clear()
    if (this.collections.size === 0) return
    this.collections = new Map()
    this.kept.clear()
  }

  private hit (entry: Entry | undefined): Entry | undefined {
    if (entry !== undefined) this.kept.get(entry)
    return entry
  }

  private unindex (entry: Entry): void {
    const indexes = this.collections.get(entry.collection)
    if (indexes === undefined) return
    if (indexes.byId.get(entry.id) === entry) indexes.byId.delete(entry.id)
    if (indexes.bySeq.get(entry.seq) === entry) indexes.bySeq.delete(entry.seq)
    if (indexes.byId.size === 0 && indexes.bySeq.size === 0) this.collections.delete(entry.collection)
  }
}
