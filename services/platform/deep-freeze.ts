/** Freezes a value shared between callers all the way down; already-frozen parts are not walked again. */
export function deepFreeze<V> (value: V): V {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value)
    for (const item of Object.values(value)) deepFreeze(item)
  }
  return value
}
