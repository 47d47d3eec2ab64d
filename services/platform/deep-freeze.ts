/**
 * Freezes a value shared between callers all the way down; already-frozen parts are not walked again. Bytes (a
 * Buffer, a typed array) cannot be frozen: they are shared as they are, and whoever holds them only reads them.
 */
export function deepFreeze<V> (value: V): V {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value) && !ArrayBuffer.isView(value)) {
    Object.freeze(value)
    for (const item of Object.values(value)) deepFreeze(item)
  }
  return value
}
