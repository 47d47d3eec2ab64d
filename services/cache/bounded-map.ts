/**
 * The one bounded map every cache in Plinth is built on. It holds at most
 * `capacity` entries and makes room with the CLOCK ("second chance") policy:
 * a hit only sets a flag on its entry, so reads cost one Map lookup and never
 * reorder anything; when the map is full, the oldest entry goes unless it was
 * hit since it was last passed over, in which case its flag is cleared and it
 * moves to the back. Hot entries therefore stay, and a stream of one-off keys
 * cannot push them out faster than they are used.
 *
 * A cache of values whose sizes differ widely may also give each entry a
 * weight when it sets it (its size, in whatever unit the cache counts) and a
 * `maxWeight` the entries' weights never exceed together: the same policy
 * then makes room by weight as well as by count, and a value heavier than
 * the whole budget is not kept. Memory stays bounded by `maxWeight` rather
 * than by `capacity` times the largest value the cache lets in.
 *
 * A cache stays only where a `npm run bench` row shows it pays; a capacity
 * of 0 keeps nothing, which is how one is measured without removing it.
 */
interface Slot<V> { value: V, used: boolean, weight: number }

export class BoundedMap<K, V> {
  private readonly slots = new Map<K, Slot<V>>()
  private weighed = 0

  /** `evicted` hears of every entry the policy drops (not of `delete` or `clear`), for indexes kept beside the map. */
  constructor (readonly capacity: number, private readonly evicted?: (key: K, value: V) => void, readonly maxWeight = Infinity) {}

  get size (): number {
    return this.slots.size
  }

  /** The weights of the entries kept, together. */
  get weight (): number {
    return this.weighed
  }

  get (key: K): V | undefined {
    const slot = this.slots.get(key)
    if (slot === undefined) return undefined
    slot.used = true
    return slot.value
  }

  /** Keeps `value` (of `weight`, 0 unless the map counts weights) and says whether it did: not past `capacity` or `maxWeight` alone. */
  set (key: K, value: V, weight = 0): boolean {
    if (weight > this.maxWeight) {
      this.delete(key)
      return false
    }
    const slot = this.slots.get(key)
    if (slot !== undefined) {
      slot.value = value
      this.weighed += weight - slot.weight
      slot.weight = weight
      if (this.weighed > this.maxWeight) {
        // Flagged, the entry is passed over until every other one has gone, and by then it fits.
        slot.used = true
        while (this.weighed > this.maxWeight) this.evictOne()
      }
      return true
    }
    if (this.capacity <= 0) return false
    while (this.slots.size > 0 && (this.slots.size >= this.capacity || this.weighed + weight > this.maxWeight)) this.evictOne()
    this.slots.set(key, { value, used: false, weight })
    this.weighed += weight
    return true
  }

  /** The value for `key`, computed and kept when absent. */
  remember (key: K, compute: () => V): V {
    const known = this.get(key)
    if (known !== undefined) return known
    const value = compute()
    this.set(key, value)
    return value
  }

  delete (key: K): boolean {
    const slot = this.slots.get(key)
    if (slot === undefined) return false
    this.slots.delete(key)
    this.weighed -= slot.weight
    return true
  }

  /** The values kept, oldest first (a pool closing what it holds). */
  * values (): IterableIterator<V> {
    for (const slot of this.slots.values()) yield slot.value
  }

  clear (): void {
    this.slots.clear()
    this.weighed = 0
  }

  private evictOne (): void {
    // Terminates: a slot passed over loses its flag, so the second lap finds one without.
    for (const [key, slot] of this.slots) {
      this.slots.delete(key)
      if (!slot.used) {
        this.weighed -= slot.weight
        this.evicted?.(key, slot.value)
        return
      }
      slot.used = false
      this.slots.set(key, slot)
    }
  }
}
