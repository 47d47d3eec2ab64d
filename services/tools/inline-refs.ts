import type { TSchema } from '@sinclair/typebox'

/**
 * A view schema with each `$ref` to one of `references` replaced by that
 * schema itself (transitively), and their `$id`s dropped: a tool's output is
 * read by clients that compile it on its own, without the HTTP layer's
 * registered schemas.
 */
export function inlineRefs<T extends TSchema> (schema: T, references: readonly TSchema[]): T {
  const byId = new Map(references.map((reference) => [reference.$id, reference]))
  const walk = (node: unknown, seen: ReadonlySet<string>): unknown => {
    if (Array.isArray(node)) return node.map((item) => walk(item, seen))
    if (node === null || typeof node !== 'object') return node
    const ref = (node as { $ref?: unknown }).$ref
    if (typeof ref === 'string' && byId.has(ref)) {
      if (seen.has(ref)) throw new Error(`schema '${ref}' refers to itself: it cannot be inlined`)
      return walk(byId.get(ref), new Set([...seen, ref]))
    }
    return Object.fromEntries(Object.entries(node).filter(([key]) => key !== '$id').map(([key, value]) => [key, walk(value, seen)]))
  }
  return walk(schema, new Set()) as T
}
