import { QueryError } from '../errors.js'

/**
 * `skip` and `limit` as both engines read them: a non-negative integer, 0 or
 * absent meaning none (MongoDB's find reads a negative limit as "one batch",
 * and its count pipeline refuses `$limit: 0`, so neither reaches the driver).
 */
export function validateCount (value: unknown, path: string): number {
  if (value === undefined) return 0
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) throw new QueryError(path, 'Must be a non-negative integer')
  return value
}
