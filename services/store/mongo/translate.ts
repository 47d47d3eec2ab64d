import {
  BSON, MongoBulkWriteError, MongoError, MongoNetworkError, MongoNotConnectedError, MongoOperationTimeoutError, MongoServerClosedError,
  MongoServerError, MongoServerSelectionError, MongoTopologyClosedError
} from 'mongodb'
import {
  DocumentTooDeepError, DocumentTooLargeError, DuplicateKeyError, IndexConflictError, IndexNotFoundError, InvalidCollectionNameError, InvalidDocumentError,
  InvalidIndexError, InvalidUpdateError, QueryError, QueryTimeoutError, StoreUnavailableError
} from '../errors.js'

/**
 * The driver's and the server's errors as the Store's typed errors, so a
 * service (and the client, through the error handler) sees what the embedded
 * engine would have raised. Most refusals never get this far: both engines
 * run the same validators first, and this maps what only the server can know.
 */

/**
 * What the call sent, for the errors whose meaning depends on it: BadValue
 * and TypeMismatch on an update mean it cannot apply to a stored document, on
 * a query (a read, a count, a delete) that the filter is wrong.
 */
export type Operation = 'query' | 'insert' | 'update'

// BadValue, TypeMismatch, PathNotViable, NotSingleValueField, EmptyFieldName.
const VALUE_ERRORS = new Set([2, 14, 28, 54, 56])
// BSONObjectTooLarge (an insert), and an update's or an upsert's result past 16 MiB.
const TOO_LARGE_CODES = new Set([10334, 17419, 17420])
/**
 * Server codes of a node that cannot serve now (stepping down, shutting down,
 * not primary, unreachable): retryable reads and writes already retried once,
 * so what is left is an election or an outage to wait out.
 */
const UNAVAILABLE_CODES = new Set([6, 7, 89, 91, 189, 9001, 10107, 11600, 11602, 13435, 13436])
const TRANSIENT_LABELS = ['RetryableWriteError', 'TransientTransactionError', 'UnknownTransactionCommitResult', 'ResetPool']

export function isUnavailable (error: unknown): boolean {
  if (error instanceof MongoNetworkError || error instanceof MongoServerSelectionError || error instanceof MongoNotConnectedError ||
    error instanceof MongoTopologyClosedError || error instanceof MongoServerClosedError || error instanceof MongoOperationTimeoutError) return true
  if (!(error instanceof MongoError)) return false
  if (TRANSIENT_LABELS.some((label) => error.hasErrorLabel(label))) return true
  return error instanceof MongoServerError && typeof error.code === 'number' && UNAVAILABLE_CODES.has(error.code)
}

interface WriteErrorLike { code?: number, errmsg?: string, err?: { keyValue?: unknown, errmsg?: string, op?: unknown }, keyValue?: unknown }

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object'

/**
 * The key of a bulk write's duplicate: the driver keeps only the message and
 * the document (`op`) of each write error, not the server's keyValue, so the
 * index's fields are read from the message (`dup key: { email: "a@x" }`) and
 * their values from the document.
 */
function keyFromDocument (message: string, op: unknown): Record<string, unknown> | undefined {
  const listed = /dup key: \{ (.*) \}/.exec(message)?.[1]
  if (listed === undefined || !isObject(op)) return undefined
  const fields = [...listed.matchAll(/(?:^|, )([^\s:,]+): /g)].map((match) => match[1])
  const valueAt = (path: string): unknown => path.split('.').reduce<unknown>((at, segment) => isObject(at) ? at[segment] : undefined, op)
  return Object.fromEntries(fields.map((field) => [field, valueAt(field) ?? null]))
}

/** keyValue and the message naming the index: on the error itself, or on a bulk write's first write error. */
function duplicateDetails (error: MongoServerError): { keyValue: Record<string, unknown>, message: string } {
  const raw: unknown = error instanceof MongoBulkWriteError ? error.writeErrors : undefined
  const writeError = (Array.isArray(raw) ? raw[0] : raw) as WriteErrorLike | undefined
  const message = writeError?.errmsg ?? writeError?.err?.errmsg ?? error.message
  const keyValue = error.keyValue ?? writeError?.err?.keyValue ?? writeError?.keyValue ?? keyFromDocument(message, writeError?.err?.op)
  return { keyValue: isObject(keyValue) ? keyValue : {}, message }
}

/** Throws the Store's error for `error`, or `error` itself when it is none of them (a bug, answered as a 500). */
export function translate (error: unknown, collection: string, operation: Operation = 'insert'): never {
  if (isUnavailable(error)) throw new StoreUnavailableError(error)
  if (error instanceof MongoServerError) {
    const code = error.code
    if (typeof code === 'number' && TOO_LARGE_CODES.has(code)) throw new DocumentTooLargeError(operation === 'update' ? 'update' : 'document')
    switch (error.code) {
      case 11000:
      case 11001: {
        const { keyValue, message } = duplicateDetails(error)
        throw new DuplicateKeyError(collection, /index: (\S+)/.exec(message)?.[1] ?? 'unknown', keyValue)
      }
      case 171:
        throw new InvalidDocumentError('document', 'A compound index cannot hold two array fields of one document (parallel arrays)')
      case 27:
        throw new IndexNotFoundError(/index not found with name \[(.*)\]/.exec(error.message)?.[1] ?? 'unknown')
      case 85:
      case 86:
        throw new IndexConflictError('An index with this name or key already exists with a different key or options')
      case 67:
        throw new InvalidIndexError('The index cannot be created')
      case 50:
        throw new QueryTimeoutError(error)
      case 66:
        throw new InvalidUpdateError('update._id', "Performing an update on the path '_id' would modify the immutable field '_id'")
      case 73:
        throw new InvalidCollectionNameError(`The collection name '${collection}' is not valid on MongoDB`)
      case 15:
        throw new DocumentTooDeepError(operation === 'update' ? 'update' : 'document', 'The document is nested too deeply')
    }
    if (typeof code === 'number' && VALUE_ERRORS.has(code)) {
      if (operation === 'update') throw new InvalidUpdateError('update', error.message)
      throw operation === 'query' ? new QueryError('filter', error.message) : new InvalidDocumentError('document', error.message)
    }
  }
  // The driver measures a document against the server's maxBsonObjectSize before sending it.
  if (error instanceof MongoError && /larger than the maximum size/i.test(error.message)) throw new DocumentTooLargeError(operation === 'update' ? 'update' : 'document')
  // The validators run first, so this means a value slipped past them; refused as the embedded engine would.
  if (error instanceof BSON.BSONError) throw new InvalidDocumentError('document', 'The document cannot be stored')
  throw error
}
