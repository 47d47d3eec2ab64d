import { AppError, commonErrors, errorCatalogue, fieldIssue, type ErrorDefinition } from '../platform/errors.js'

/**
 * The Store's error catalogue: what both engines answer, whatever the engine,
 * so services handle one type. Each code once, with its status; the classes
 * below are what engines throw and callers test with `instanceof`, each made
 * from its entry.
 */
export const storeErrors = errorCatalogue('store', {
  duplicateKey: {
    code: 'APP_DUPLICATE_KEY',
    status: 409,
    message: ({ fields }: { fields: string[] }) => `A record with the same ${fields.join(', ') || 'key'} already exists`,
    details: ({ fields }: { fields: string[] }) => ({ fields: fields.map((key) => ({ path: key === '_id' ? 'id' : key, message: 'is already taken' })) }),
    description: 'a record with the same unique key already exists; `details.fields` names the key'
  },
  invalidQuery: {
    code: 'APP_INVALID_QUERY',
    status: 400,
    message: ({ path, why }: { path: string, why: string }) => `${why} (at ${path})`,
    details: ({ path, why }) => fieldIssue(path, why),
    description: 'a filter, sort, projection or option is outside what the store takes; `details.fields` points at it'
  },
  invalidCollectionName: {
    code: 'APP_INVALID_COLLECTION_NAME',
    status: 400,
    message: ({ path, why }: { path: string, why: string }) => `${why} (at ${path})`,
    details: ({ path, why }) => fieldIssue(path, why),
    description: 'a collection name either engine refuses: empty, over 120 bytes, holding `$` or NUL, `..`, a leading or trailing `.`, or starting `system.` or `sqlite_`'
  },
  invalidDocument: {
    code: 'APP_INVALID_DOCUMENT',
    status: 400,
    message: ({ path, why }: { path: string, why: string }) => `${why} (at ${path})`,
    details: ({ path, why }) => fieldIssue(path, why),
    description: 'a document holds what cannot be stored: a `$`-prefixed, dotted or empty field name, NaN, Infinity, binary, a non-string `_id`'
  },
  documentTooLarge: {
    code: 'APP_DOCUMENT_TOO_LARGE',
    status: 413,
    message: ({ path, why }: { path: string, why: string }) => `${why} (at ${path})`,
    details: ({ path, why }) => fieldIssue(path, why),
    description: 'a document, or what an update would make of one, is 16 MiB or more as BSON'
  },
  documentTooDeep: {
    code: 'APP_DOCUMENT_TOO_DEEP',
    status: 400,
    message: ({ path, why }: { path: string, why: string }) => `${why} (at ${path})`,
    details: ({ path, why }) => fieldIssue(path, why),
    description: 'a document, or what an update would make of one, nests objects and arrays deeper than 100 levels'
  },
  tooManyDocuments: {
    code: 'APP_TOO_MANY_DOCUMENTS',
    status: 413,
    message: ({ limit, operation }: { limit: number, operation: string }) => `One ${operation} may touch at most ${limit} documents; page through larger sets`,
    details: ({ limit }) => ({ limit }),
    description: 'one all-or-nothing write would touch more documents than `details.limit`'
  },
  invalidUpdate: {
    code: 'APP_INVALID_UPDATE',
    status: 400,
    message: ({ path, why }: { path: string, why: string }) => `${why} (at ${path})`,
    details: ({ path, why }) => fieldIssue(path, why),
    description: 'an update cannot apply to a stored document ($inc on text, $push on a non-array, a change to `_id`)'
  },
  invalidIndex: { code: 'APP_INVALID_INDEX', status: 400, message: ({ why }: { why: string }) => why, description: 'an index key, name or count the store refuses' },
  indexConflict: { code: 'APP_INDEX_CONFLICT', status: 409, message: ({ why }: { why: string }) => why, description: 'another index already has this name or this key' },
  indexNotFound: { code: 'APP_INDEX_NOT_FOUND', status: 404, message: ({ name }: { name: string }) => `No index named '${name}'`, description: 'no index of that name' },
  busy: {
    code: 'APP_STORE_BUSY',
    status: 503,
    message: 'The store is busy with other writes; retry the request',
    details: () => ({ retryAfterSeconds: 1 }),
    description: 'the embedded store\'s write lock stayed taken past STORE_BUSY_TIMEOUT_MS (another process writing the same DATA_DIR); nothing was written; Retry-After says when to try again'
  },
  queryTimeout: {
    code: 'APP_QUERY_TIMEOUT',
    status: 503,
    message: 'The query ran past the store\'s time limit: narrow the filter, simplify the pattern or declare an index',
    description: 'a query ran past the store\'s time limit (MONGODB_QUERY_TIMEOUT_MS); retrying it will not help'
  }
})

type PathEntry = ErrorDefinition<{ path: string, why: string }>

/** An AppError subclass's constructor arguments, from the catalogue entry's error. */
function parts (made: AppError): [string, number, string, AppError['details']] {
  return [made.code, made.status, made.message, made.details]
}

/** A unique index violation. */
export class DuplicateKeyError extends AppError {
  readonly collection: string
  readonly index: string
  readonly keyValue: Record<string, unknown>

  constructor (collection: string, index: string, keyValue: Record<string, unknown>) {
    super(...parts(storeErrors.duplicateKey({ fields: Object.keys(keyValue) })))
    this.collection = collection
    this.index = index
    this.keyValue = keyValue
  }
}

/** The embedded engine could not take the file's write lock in time; nothing was written, so a retry is safe. */
export class StoreBusyError extends AppError {
  constructor () {
    super(...parts(storeErrors.busy()))
  }
}

/** `path` locates the offending clause, e.g. `filter.$or[1].age.$foo`. */
export class QueryError extends AppError {
  readonly path: string

  constructor (path: string, message: string, entry: PathEntry = storeErrors.invalidQuery) {
    super(...parts(entry({ path, why: message })))
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
    super('collection', message, storeErrors.invalidCollectionName)
  }
}

/**
 * A document (or a value an update would store) that one engine could not
 * store as the other would: `$`-prefixed, dotted, empty or NUL-holding field
 * names, NaN or ±Infinity, binary or other non-JSON values, a non-string `_id`.
 * A QueryError, so callers that refuse bad input by that type keep doing so.
 */
export class InvalidDocumentError extends QueryError {
  constructor (path: string, message: string, entry: PathEntry = storeErrors.invalidDocument) {
    super(path, message, entry)
  }
}

/** A document, or an update's result, of MongoDB's 16 MiB or more (measured as BSON): 413 on both engines. */
export class DocumentTooLargeError extends InvalidDocumentError {
  constructor (path: string, bytes?: number) {
    super(path, `A document must be smaller than 16 MiB (16,777,216 bytes as BSON)${bytes === undefined ? '' : `; this one would be ${bytes} bytes`}`, storeErrors.documentTooLarge)
  }
}

/** A document nested deeper than the documented 100 levels. */
export class DocumentTooDeepError extends InvalidDocumentError {
  constructor (path: string, message: string) {
    super(path, message, storeErrors.documentTooDeep)
  }
}

/**
 * A multi-document write (insertMany, updateMany, deleteMany) over the number
 * of documents one all-or-nothing write may touch on both engines; larger
 * sets go in pages (`extensions.sweep`).
 */
export class TooManyDocumentsError extends AppError {
  constructor (limit: number, operation: string) {
    super(...parts(storeErrors.tooManyDocuments({ limit, operation })))
  }
}

/** An update that cannot apply to a stored document ($inc on a string, $push on a non-array…). */
export class InvalidUpdateError extends AppError {
  readonly path: string

  constructor (path: string, message: string) {
    super(...parts(storeErrors.invalidUpdate({ path, why: message })))
    this.path = path
  }
}

/** An index key, name or count the Store refuses, or dropping the `_id_` index. */
export class InvalidIndexError extends AppError {
  constructor (message: string) {
    super(...parts(storeErrors.invalidIndex({ why: message })))
  }
}

/** Another index already has this name (with another key or options) or this key (under another name). */
export class IndexConflictError extends AppError {
  constructor (message: string) {
    super(...parts(storeErrors.indexConflict({ why: message })))
  }
}

export class IndexNotFoundError extends AppError {
  constructor (name: string) {
    super(...parts(storeErrors.indexNotFound({ name })))
  }
}

/**
 * The store did not answer (network failure, no primary reachable within the
 * server-selection timeout, a client already closed). Worth retrying, on this
 * node or another, hence Retry-After (commonErrors.storeUnavailable).
 */
export class StoreUnavailableError extends AppError {
  constructor (cause?: unknown, engine = 'MongoDB') {
    super(...parts(commonErrors.storeUnavailable({ engine })))
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
    super(...parts(storeErrors.queryTimeout()))
    if (cause !== undefined) this.cause = cause
  }
}
