import { AppError, fieldIssue } from '../errors.js'

/**
 * Both engines raise exactly these, so services handle one type whatever the
 * engine: a unique index violation, a filter, update or document outside the
 * subset, an index refused, and a store that does not answer.
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

  constructor (path: string, message: string, code = 'APP_INVALID_QUERY', status = 400) {
    super(code, status, `${message} (at ${path})`, fieldIssue(path, message))
    this.path = path
  }
}

/**
 * A collection name one engine or the other cannot take: empty, too long,
 * holding `$` or NUL, `..`, a leading or trailing `.`, or a reserved prefix
 * (`system.` on MongoDB, `sqlite_` on SQLite). Both refuse all of them.
 */
export class InvalidCollectionNameError extends QueryError {
  constructor (message: string) {
    super('collection', message, 'APP_INVALID_COLLECTION_NAME')
  }
}

/**
 * A document (or a value an update would store) that one engine could not
 * store as the other would: `$`-prefixed, dotted, empty or NUL-holding field
 * names, NaN or ±Infinity, binary or other non-JSON values, a non-string `_id`.
 * A QueryError, so callers that refuse bad input by that type keep doing so.
 */
export class InvalidDocumentError extends QueryError {
  constructor (path: string, message: string, code = 'APP_INVALID_DOCUMENT', status = 400) {
    super(path, message, code, status)
  }
}

/** A document, or an update's result, of MongoDB's 16 MiB or more (measured as BSON): 413 on both engines. */
export class DocumentTooLargeError extends InvalidDocumentError {
  constructor (path: string, bytes?: number) {
    super(path, `A document must be smaller than 16 MiB (16,777,216 bytes as BSON)${bytes === undefined ? '' : `; this one would be ${bytes} bytes`}`, 'APP_DOCUMENT_TOO_LARGE', 413)
  }
}

/** A document nested deeper than the documented 100 levels. */
export class DocumentTooDeepError extends InvalidDocumentError {
  constructor (path: string, message: string) {
    super(path, message, 'APP_DOCUMENT_TOO_DEEP')
  }
}

/**
 * A multi-document write (insertMany, updateMany, deleteMany) over the number
 * of documents one all-or-nothing write may touch on both engines; larger
 * sets go in pages (`extensions.sweep`).
 */
export class TooManyDocumentsError extends AppError {
  constructor (limit: number, operation: string) {
    super('APP_TOO_MANY_DOCUMENTS', 413, `One ${operation} may touch at most ${limit} documents; page through larger sets`, { limit })
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

/** An index key, name or count the Store refuses, or dropping the `_id_` index. */
export class InvalidIndexError extends AppError {
  constructor (message: string) {
    super('APP_INVALID_INDEX', 400, message)
  }
}

/** Another index already has this name (with another key or options) or this key (under another name). */
export class IndexConflictError extends AppError {
  constructor (message: string) {
    super('APP_INDEX_CONFLICT', 409, message)
  }
}

export class IndexNotFoundError extends AppError {
  constructor (name: string) {
    super('APP_INDEX_NOT_FOUND', 404, `No index named '${name}'`)
  }
}

/**
 * The store did not answer (network failure, no primary reachable within the
 * server-selection timeout, a client already closed). Worth retrying, on this
 * node or another, hence Retry-After.
 */
export class StoreUnavailableError extends AppError {
  constructor (cause?: unknown) {
    super('APP_STORE_UNAVAILABLE', 503, 'The store is not answering; try again shortly', { retryAfterSeconds: 5 })
    if (cause !== undefined) this.cause = cause
  }
}

/**
 * A filtered operation ran past the server-side time limit
 * (MONGODB_QUERY_TIMEOUT_MS), typically a pattern that backtracks on PCRE.
 * Retrying the same query would not help, so no Retry-After.
 */
export class QueryTimeoutError extends AppError {
  constructor (cause?: unknown) {
    super('APP_QUERY_TIMEOUT', 503, 'The query ran past the store\'s time limit: narrow the filter, simplify the pattern or declare an index')
    if (cause !== undefined) this.cause = cause
  }
}
