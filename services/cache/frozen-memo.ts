import { deepFreeze } from '../platform/deep-freeze.js'

/**
 * The one way to remember what is derived from a frozen value: a stored
 * document read shared (Store `extensions.shared`), a parsed collection
 * definition, a field list. A frozen value never changes, so whatever was
 * derived from it stays true for as long as the value itself is alive, and
 * the WeakMap lets both go together: nothing to evict, nothing to invalidate.
 * A value that is not frozen may still change, so it is derived afresh.
 *
 * `key` names a second input of the derivation (a deny mask, a query scope);
 * only the value for the last key asked is kept, so memory stays one entry
 * per frozen value whatever the keys. Keys are compared with `===`.
 * What is kept is shared by every caller, so it is deep-frozen in turn, and
 * what is derived from it can be remembered the same way.
 */
export class FrozenMemo<T extends object, R, K = undefined> {
  private readonly derived = new WeakMap<T, { key: K, value: R }>()

  constructor (private readonly derive: (value: T, key: K) => R) {}

  get (value: T, key: K = undefined as K): R {
    const known = this.derived.get(value)
    if (known !== undefined && known.key === key) return known.value
    const derived = this.derive(value, key)
    if (!Object.isFrozen(value)) return derived
    this.derived.set(value, { key, value: deepFreeze(derived) })
    return derived
  }
}
