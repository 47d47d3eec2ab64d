import { TooManyDocumentsError } from '../errors.js'
import { isPlainObject } from './values.js'

/**
 * The most documents one all-or-nothing write (insertMany, updateMany,
 * deleteMany) may touch, on both engines. MongoDB runs such a write as one
 * transaction, which the server aborts after 60 s; this bound keeps every one
 * far inside it. Larger sets are written in pages (`extensions.sweep`).
 */
export const MAX_WRITE_DOCUMENTS = 10_000

export function checkWriteCount (count: number, operation: 'insertMany' | 'updateMany' | 'deleteMany'): void {
  if (count > MAX_WRITE_DOCUMENTS) throw new TooManyDocumentsError(MAX_WRITE_DOCUMENTS, operation)
}

/**
 * The value with every -0 turned into 0 (a copy where one was found, the value
 * itself otherwise). JSON has no -0, so the embedded engine stores 0; MongoDB
 * keeps a double -0 and counts `$set: -0` over 0 as a change. Both engines are
 * given 0.
 */
export function withoutNegativeZero<T> (value: T): T {
  return strip(value) as T
}

function strip (value: unknown): unknown {
  if (typeof value === 'number') return value === 0 ? 0 : value
  if (Array.isArray(value)) {
    let copy: unknown[] | null = null
    for (let i = 0; i < value.length; i++) {
      const next = strip(value[i])
      if (!Object.is(next, value[i])) (copy ??= [...value])[i] = next
    }
    return copy ?? value
  }
  if (!isPlainObject(value)) return value
  let copy: Record<string, unknown> | null = null
  for (const key of Object.keys(value)) {
    const next = strip(value[key])
    if (!Object.is(next, value[key])) (copy ??= { ...value })[key] = next
  }
  return copy ?? value
}
