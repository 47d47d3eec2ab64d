import { InvalidCollectionNameError } from '../errors.js'

/** Bytes of UTF-8 a collection name may take: with a database name, well inside MongoDB's 255-byte namespace. */
export const MAX_COLLECTION_NAME_BYTES = 120

/**
 * The collection names both engines take: what MongoDB refuses (`$`, NUL,
 * an empty segment as in `a..b` or a leading or trailing `.`, the reserved
 * `system.` prefix) and what SQLite reserves (`sqlite_`) are refused by both,
 * the same way, before either engine sees the name.
 */
export function validateCollectionName (name: unknown): asserts name is string {
  if (typeof name !== 'string' || name.length === 0) throw new InvalidCollectionNameError('A collection name must be a non-empty string')
  if (!name.isWellFormed()) throw new InvalidCollectionNameError('A collection name cannot hold unpaired surrogates')
  if (Buffer.byteLength(name, 'utf8') > MAX_COLLECTION_NAME_BYTES) throw new InvalidCollectionNameError(`A collection name cannot be longer than ${MAX_COLLECTION_NAME_BYTES} bytes`)
  if (name.includes('\0')) throw new InvalidCollectionNameError('A collection name cannot contain a null byte')
  if (name.includes('$')) throw new InvalidCollectionNameError("A collection name cannot contain '$'")
  if (name.startsWith('.') || name.endsWith('.') || name.includes('..')) throw new InvalidCollectionNameError("A collection name cannot start or end with '.' or contain '..'")
  if (name.startsWith('system.')) throw new InvalidCollectionNameError("A collection name cannot start with 'system.' (reserved by MongoDB)")
  if (name.startsWith('sqlite_')) throw new InvalidCollectionNameError("A collection name cannot start with 'sqlite_' (reserved by SQLite)")
}
