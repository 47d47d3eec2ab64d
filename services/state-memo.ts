import { deepFreeze } from './deep-freeze.js'

/**
 * Answers derived from Store reads, reused while the state stamp of the
 * collections they were read from has not moved (see Store.stateStamp): the
 * same question in the same state of the data has the same answer. With an
 * engine that cannot tell (null stamp) nothing is ever reused. Values are
 * shared between callers, so they are frozen; bounded in entries, oldest
 * first out.
 */
export class StateMemo<V> {
  private readonly entries = new Map<string, { stamp: number, value: V }>()

  constructor (private readonly stateStamp: (collection: string) => number | null, private readonly maxEntries = 4096) {}

  /**
   * The stamp to pass to `get` and `set` around one computation that reads
   * `collection` (and `also`, when it reads two). Taken before the reads: if
   * anything changes while they run, the stamp stored with the answer is
   * already stale and the entry is never hit.
   */
  stamp (collection: string, also?: string): number | null {
    const stamp = this.stateStamp(collection)
    if (also === undefined || stamp === null) return stamp
    const other = this.stateStamp(also)
    return other === null ? null : Math.max(stamp, other)
  }

  get (key: string, stamp: number | null): V | undefined {
    if (stamp === null) return undefined
    const entry = this.entries.get(key)
    return entry !== undefined && entry.stamp === stamp ? entry.value : undefined
  }

  set (key: string, stamp: number | null, value: V): void {
    if (stamp === null) return
    if (this.entries.size >= this.maxEntries && !this.entries.has(key)) this.entries.delete(this.entries.keys().next().value as string)
    this.entries.set(key, { stamp, value: deepFreeze(value) })
  }

  /** The answer for `key`, read from `collection`: the one worked out in its current state, or `compute`'s, kept for next time. */
  async remember (collection: string, key: string, compute: () => Promise<V>): Promise<V> {
    const stamp = this.stamp(collection)
    const known = this.get(key, stamp)
    if (known !== undefined) return known
    const value = await compute()
    this.set(key, stamp, value)
    return value
  }
}
