import type { Document, Filter, Store } from '../store/types.js'
import type { SecretBox } from './crypto.js'

/** The job that re-seals values left under a retired master key, and how often it runs. */
export const RESEAL_JOB = 'secrets.reseal'
export const RESEAL_EVERY_MS = 6 * 3_600_000

/** One sealed value of a document: where it sits (a dotted path; array positions are numbers) and the associated data it was sealed with. */
export interface SealedValue { path: string, sealed: string, associatedData: string }

/** What an owner of sealed values declares once: where they are stored and how each one's associated data follows from its document. */
export interface SealedValues {
  collection: string
  /** Narrows the walk to the documents that may hold a sealed value. */
  filter?: Filter
  /** The sealed values a document holds now; none for a document without any. */
  values: (doc: Document) => SealedValue[]
  /** Where an owner keeps the key id beside its value (to show or query it); kept current on re-seal. */
  keyIdPath?: string
}

/** What one run did in one collection: documents read, values re-sealed, documents changed meanwhile (left alone), values no listed key opens. */
export interface ResealCounts { documents: number, resealed: number, changed: number, unreadable: number }

const PAGE_SIZE = 200

/**
 * The one re-seal mechanism. After the operator rotates the master key (the
 * old one listed as retired), every value still sealed under the old key is
 * opened and sealed again under the current one, so the retired key can be
 * dropped. Owners declare their values here; the job walks each collection a
 * page at a time.
 */
export class Resealer {
  readonly #owners: SealedValues[] = []

  constructor (private readonly deps: { store: Store, box: SecretBox }) {}

  register (owner: SealedValues): void {
    if (this.#owners.some((known) => known.collection === owner.collection)) throw new Error(`sealed values of "${owner.collection}" are declared twice`)
    this.#owners.push(owner)
  }

  /** Re-seals what a retired key sealed, in every declared collection; answers the counts per collection. */
  async run (): Promise<Record<string, ResealCounts>> {
    const counts: Record<string, ResealCounts> = {}
    for (const owner of this.#owners) counts[owner.collection] = await this.resealCollection(owner)
    return counts
  }

  private async resealCollection (owner: SealedValues): Promise<ResealCounts> {
    const counts: ResealCounts = { documents: 0, resealed: 0, changed: 0, unreadable: 0 }
    const collection = this.deps.store.collection(owner.collection)
    let after: string | null = null
    for (;;) {
      const filter: Filter = after === null ? { ...owner.filter } : { ...owner.filter, _id: { $gt: after } }
      const page = await collection.find(filter, { sort: { _id: 1 }, limit: PAGE_SIZE }).toArray()
      for (const doc of page) {
        counts.documents++
        await this.resealDocument(owner, doc, counts)
      }
      if (page.length < PAGE_SIZE) return counts
      after = page[page.length - 1]._id
    }
  }

  private async resealDocument (owner: SealedValues, doc: Document & { _id: string }, counts: ResealCounts): Promise<void> {
    const expected: Filter = { _id: doc._id }
    const set: Document = {}
    for (const value of owner.values(doc)) {
      let fresh: string | null
      try {
        fresh = this.deps.box.reseal(value.sealed, value.associatedData)
      } catch {
        // Sealed under no key this node knows: nothing to do here, and the retired keys were not what opened it.
        counts.unreadable++
        continue
      }
      if (fresh === null) continue
      expected[value.path] = value.sealed
      set[value.path] = fresh
    }
    const resealed = Object.keys(set).length
    if (resealed === 0) return
    if (owner.keyIdPath !== undefined) set[owner.keyIdPath] = this.deps.box.keyId
    // Conditional on every sealed value read: one a user replaced meanwhile is already under the current key and stays.
    const { modifiedCount } = await this.deps.store.collection(owner.collection).updateOne(expected, { $set: set })
    if (modifiedCount === 1) counts.resealed += resealed
    else counts.changed++
  }
}

/** The value at a dotted `path` of a document, as one sealed value when it is a string there; none otherwise (absent, null, cleared). */
export function sealedAt (doc: Document, path: string, associatedData: string): SealedValue[] {
  let value: unknown = doc
  for (const name of path.split('.')) value = value !== null && typeof value === 'object' ? (value as Document)[name] : undefined
  return typeof value === 'string' ? [{ path, sealed: value, associatedData }] : []
}
