/**
 * The one bounded map every cache in Plinth is built on. It holds at most
 * `capacity` entries and makes room with the CLOCK ("second chance") policy:
 * a hit only sets a flag on its entry, so reads cost one Map lookup and never
 * reorder anything; when the map is full, the oldest entry goes unless it was
 * hit since it was last passed over, in which case its flag is cleared and it
 * moves to the back. Hot entries therefore stay, and a stream of one-off keys
 * cannot push them out faster than they are used.
 *
 * A cache stays only where a `npm run bench` row shows it pays; a capacity
 * of 0 keeps nothing, which is how one is measured without removing it.
 */
interface Slot<V> { value: V, used: boolean }

export class BoundedMap<K, V> {
  private readonly slots = new Map<K, Slot<V>>()

  /** `evicted` hears of every entry the policy drops (not of `delete` or `clear`), for indexes kept beside the map. */
  constructor (readonly capacity: number, private readonly evicted?: (key: K, value: V) => void) {}

  get size (): number {
    return this.slots.size
  }

  get (key: K): V | undefined {
    const slot = this.slots.get(key)
    if (slot === undefined) return undefined
    slot.used = true
    return slot.value
  }

  set (key: K, value: V): void {
    const slot = this.slots.get(key)
    if (slot !== undefined) {
      slot.value = value
      return
    }
    if (this.capacity <= 0) return
    if (this.slots.size >= this.capacity) this.evictOne()
    this.slots.set(key, { value, used: false })
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
    return this.slots.delete(key)
  }

  clear (): void {
    this.slots.clear()
  }

  private evictOne (): void {
    // Terminates: a slot passed over loses its flag, so the second lap finds one without.
    for (const [key, slot] of this.slots) {
      this.slots.delete(key)
      if (!slot.used) {
        this.evicted?.(key, slot.value)
        return
      }
      slot.used = false
      this.slots.set(key, slot)
    }
  }
}
