import type { StoreCursor } from '../types.js'

/**
 * better-sqlite3 runs a query to completion synchronously and a connection
 * cannot serve other statements while an iterator is open, so the cursor runs
 * its query once, on first use, and hands out the (already limited) result.
 */
export class SqliteCursor<T> implements StoreCursor<T> {
  private result: T[] | undefined

  constructor (private readonly run: () => T[]) {}

  private materialize (): T[] {
    this.result ??= this.run()
    return this.result
  }

  async toArray (): Promise<T[]> {
    return this.materialize().slice()
  }

  async * [Symbol.asyncIterator] (): AsyncIterator<T> {
    yield * this.materialize()
  }
}
