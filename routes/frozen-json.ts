/**
 * JSON text of answers built from shared values: lookups reused while the
 * Store's state holds (StateMemo) and shared Store reads hand every request
 * the same deep-frozen instance, which never changes, so its text is made
 * once and reused by every answer that carries it. These values hold plain
 * JSON only (strings, finite numbers, booleans, null, arrays and objects, dates
 * already as ISO text), so JSON.stringify writes what the response schemas
 * describe. A value that is not frozen is written afresh each time.
 */
const texts = new WeakMap<object, string>()

/** The Content-Type to set beside a custom serializer (Fastify adds none for a string payload). */
export const JSON_TYPE = 'application/json; charset=utf-8'

export function frozenJson (value: object): string {
  let text = texts.get(value)
  if (text === undefined) {
    text = JSON.stringify(value)
    if (Object.isFrozen(value)) texts.set(value, text)
  }
  return text
}

/** The success envelope `{ success: true, data }` around such a value, for `reply.serializer`. */
export function successJson (envelope: { success: true, data: object }): string {
  return `{"success":true,"data":${frozenJson(envelope.data)}}`
}
