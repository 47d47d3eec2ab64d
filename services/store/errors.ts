import { AppError, fieldIssue } from '../errors.js'

/**
 * Both engines raise exactly these, so services handle one type whatever the
 * engine: a unique index violation, and a filter or update outside the subset.
 */
export class DuplicateKeyError extends AppError {
  readonly collection: string
  readonly index: string
  readonly keyValue: Record<string, unknown>

  constructor (collection: string, index: string, keyValue: Record<string, unknown>) {
    super('APP_DUPLICATE_KEY', 409, `A record with the same ${Object.keys(keyValue).join(', ') || 'key'} already exists`, { fields: Object.keys(keyValue).map((key) => ({ path: key === '_id' ? 'id' : key, message: 'is already taken' })) })
    this.collection = collection
    this.index = index
    this.keyValue = keyValue
  }
}

/** `path` locates the offending clause, e.g. `filter.$or[1].age.$foo`. */
export class QueryError extends AppError {
  readonly path: string

  constructor (path: string, message: string) {
    super('APP_INVALID_QUERY', 400, `${message} (at ${path})`, fieldIssue(path, message))
    this.path = path
  }
}

/** An update that cannot apply to a stored document ($inc on a string, $push on a non-array…). */
export class InvalidUpdateError extends AppError {
  readonly path: string

  constructor (path: string, message: string) {
    super('APP_INVALID_UPDATE', 400, `${message} (at ${path})`, fieldIssue(path, message))
    this.path = path
  }
}
