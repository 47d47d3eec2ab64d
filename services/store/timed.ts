import { performance } from 'node:perf_hooks'
import type { Document, SharedReads, Store, StoreCollection, StoreCursor, StoreExtensions } from './types.js'

/** The operations timed: the port's method names, a bounded set. */
export type StoreOperation = Exclude<keyof StoreCollection, 'collectionName'> | 'sharedFindOne' | 'sharedFind' | 'sharedScan'

export type StoreObserver = (operation: StoreOperation, seconds: number) => void

const TIMED: ReadonlyArray<Exclude<StoreOperation, 'find' | `shared${string}`>> = [
  'insertOne', 'insertMany', 'findOne', 'countDocuments', 'updateOne', 'updateMany', 'findOneAndUpdate',
  'findOneAndDelete', 'deleteOne', 'deleteMany', 'createIndex', 'dropIndex', 'listIndexes', 'drop'
]

async function timed<R> (observe: StoreObserver, operation: StoreOperation, run: () => Promise<R>): Promise<R> {
  const started = performance.now()
  try {
    return await run()
  } finally {
    observe(operation, (performance.now() - started) / 1000)
  }
}

/** A cursor whose `toArray` is timed; iterating it is not (the time would include the caller's work between documents). */
function timedCursor<T> (cursor: StoreCursor<T>, observe: StoreObserver, operation: 'find' | 'sharedFind'): StoreCursor<T> {
  return {
    toArray: async () => await timed(observe, operation, async () => await cursor.toArray()),
    [Symbol.asyncIterator]: () => cursor[Symbol.asyncIterator]()
  }
}

function timedCollection<T extends Document> (collection: StoreCollection<T>, observe: StoreObserver): StoreCollection<T> {
  const wrapped: Record<string, unknown> = {
    collectionName: collection.collectionName,
    find: (...args: Parameters<StoreCollection<T>['find']>) => timedCursor(collection.find(...args), observe, 'find')
  }
  for (const operation of TIMED) {
    const method = collection[operation] as (...args: unknown[]) => Promise<unknown>
    wrapped[operation] = async (...args: unknown[]) => await timed(observe, operation, async () => await method.apply(collection, args))
  }
  return wrapped as unknown as StoreCollection<T>
}

function timedShared<T extends Document> (shared: SharedReads<T>, observe: StoreObserver): SharedReads<T> {
  return {
    findOne: async (filter) => await timed(observe, 'sharedFindOne', async () => await shared.findOne(filter)),
    find: (filter, options) => timedCursor(shared.find(filter, options), observe, 'sharedFind'),
    scan: async (window, filter, options) => await timed(observe, 'sharedScan', async () => await shared.scan(window, filter, options))
  }
}

const engines = new WeakMap<Store, Store>()

/** The engine under a timed Store, or the Store itself: for what needs the engine's own handle (GridFS beside MongoDB). */
export function untimed (store: Store): Store {
  return engines.get(store) ?? store
}

/**
 * The Store with its operations timed, for metrics. Installed only when
 * metrics are on, so a server without them runs the engine as it is. Results
 * pass through untouched (shared reads keep their frozen identities); sweeps,
 * text search and the clock are not timed.
 */
export function timedStore (store: Store, observe: StoreObserver): Store {
  // Each call wraps what the engine hands out, as it hands it out: services take their collections once, when built.
  const extensions: StoreExtensions = {
    shared: <T extends Document>(name: string) => timedShared(store.extensions.shared<T>(name), observe),
    sweep: (name) => store.extensions.sweep(name),
    now: async () => await store.extensions.now(),
    text: (name) => store.extensions.text(name)
  }
  const timedOne: Store = {
    engine: store.engine,
    collection: <T extends Document>(name: string) => timedCollection(store.collection<T>(name), observe),
    listCollections: async () => await store.listCollections(),
    dropCollection: async (name) => await store.dropCollection(name),
    extensions,
    ping: async () => await store.ping(),
    close: async () => await store.close()
  }
  engines.set(timedOne, store)
  return timedOne
}
