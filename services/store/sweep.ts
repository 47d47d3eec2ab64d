import type { Document, Filter, PagedWrites, StoreCollection, Update } from './types.js'

/** Documents per page of an internal sweep when the deployment does not say (STORE_SWEEP_PAGE_SIZE). */
export const DEFAULT_SWEEP_PAGE_SIZE = 1000

/** `filter` narrowed to the page's documents, which must still match it when written. */
function within (filter: Filter, ids: string[]): Filter {
  return Object.hasOwn(filter, '_id') ? { $and: [filter, { _id: { $in: ids } }] } : { ...filter, _id: { $in: ids } }
}

/**
 * Internal sweeps (revoking sessions, pruning logs and jobs, dropping a
 * project's data) touch any number of documents. Each page here is one
 * bounded all-or-nothing write of at most `pageSize` documents, so none runs
 * into MongoDB's transaction limits or holds the embedded engine's write lock
 * for long; the sweep as a whole is not atomic. Every sweep can be run again
 * and continues with what is left, which is what lets a job that was killed
 * half-way finish the work when it is retried.
 */
export function pagedWrites<T extends Document> (collection: StoreCollection<T>, pageSize: number, drop: () => Promise<boolean>): PagedWrites {
  const page = async (filter: Filter, after: string | null): Promise<string[]> => {
    const query = after === null ? filter : { $and: [filter, { _id: { $gt: after } }] }
    const docs = await collection.find(query, { sort: { _id: 1 }, limit: pageSize, projection: { _id: 1 } }).toArray()
    return docs.map((doc) => doc._id)
  }
  const writes: PagedWrites = {
    deleteMany: async (filter: Filter) => {
      let deleted = 0
      for (;;) {
        // Deleted documents leave the filter, so each page starts from the beginning again.
        const ids = await page(filter, null)
        if (ids.length > 0) deleted += (await collection.deleteMany(within(filter, ids))).deletedCount
        if (ids.length < pageSize) return deleted
      }
    },
    updateMany: async (filter: Filter, update: Update) => {
      let modified = 0
      // Updated documents may still match, so pages follow _id order.
      for (let after: string | null = null; ;) {
        const ids = await page(filter, after)
        if (ids.length > 0) modified += (await collection.updateMany(within(filter, ids), update)).modifiedCount
        if (ids.length < pageSize) return modified
        after = ids[ids.length - 1]
      }
    },
    drop: async () => {
      await writes.deleteMany({})
      return await drop()
    }
  }
  return writes
}
