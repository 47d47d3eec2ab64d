/**
 * JSON of answers built from shared values: lookups reused while the state
 * stamp of what they were read from holds (StateMemo) and shared Store reads
 * hand every request the same deep-frozen instance, which never changes, so its JSON is written
 * once and reused by every answer that carries it. These values hold plain
 * JSON only (strings, finite numbers, booleans, null, arrays and objects,
 * dates already as ISO text), so JSON.stringify writes what the response
 * schemas describe. A value that is not frozen is written afresh.
 *
 * A small answer goes out as text, which Node sends in one write with the
 * headers. A page of records goes out as bytes joined from each record's
 * encoded JSON: as text it would be measured and encoded again on its way
 * out, which costs more than the rest of its serialization.
 */
/** The Content-Type to set beside a custom serializer. */
export const JSON_TYPE = 'application/json; charset=utf-8'

function frozenMemo<T> (write: (value: object) => T): (value: object) => T {
  const written = new WeakMap<object, T>()
  return (value) => {
    let out = written.get(value)
    if (out === undefined) {
      out = write(value)
      if (Object.isFrozen(value)) written.set(value, out)
    }
    return out
  }
}

export const frozenText = frozenMemo((value) => JSON.stringify(value))
export const frozenJson = frozenMemo((value) => Buffer.from(JSON.stringify(value)))

const COMMA = 0x2c

// Pages are carved from shared slabs, as Node's Buffer pool does for small buffers: a page is larger
// than that pool takes, and an ArrayBuffer of its own for every page costs more than writing it.
const SLAB_SIZE = 256 * 1024
let slab = Buffer.allocUnsafeSlow(SLAB_SIZE)
let slabUsed = 0

function allocate (length: number): Buffer {
  if (length > SLAB_SIZE / 8) return Buffer.allocUnsafe(length)
  if (slabUsed + length > SLAB_SIZE) {
    slab = Buffer.allocUnsafeSlow(SLAB_SIZE)
    slabUsed = 0
  }
  const out = slab.subarray(slabUsed, slabUsed + length)
  // Keeps the next answer aligned, as Node's pool does.
  slabUsed += (length + 7) & ~7
  return out
}

/** `head`, then the encoded items separated by commas, then `tail`, in one buffer. */
export function joinJson (head: Buffer, items: readonly Buffer[], tail: Buffer): Buffer {
  let length = head.length + tail.length + Math.max(0, items.length - 1)
  for (let i = 0; i < items.length; i++) length += items[i].length
  const out = allocate(length)
  out.set(head, 0)
  let offset = head.length
  for (let i = 0; i < items.length; i++) {
    if (i > 0) out[offset++] = COMMA
    out.set(items[i], offset)
    offset += items[i].length
  }
  out.set(tail, offset)
  return out
}

/**
 * A serializer for `reply.serializer`. Fastify's typings say a serializer
 * returns text; it sends a Buffer the same way (with the Content-Length of
 * its bytes), and the route keeps its typed envelope in `send`.
 */
export function bytesSerializer<T> (serialize: (payload: T) => Buffer): (payload: T) => string {
  return serialize as unknown as (payload: T) => string
}

/** The success envelope `{ success: true, data }` around a shared value, for `reply.serializer`. */
export function successJson (envelope: { success: true, data: object }): string {
  return `{"success":true,"data":${frozenText(envelope.data)}}`
}
