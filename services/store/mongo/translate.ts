import {
  BSON, MongoBulkWriteError, MongoError, MongoNetworkError, MongoNotConnectedError, MongoOperationTimeoutError, MongoServerClosedError,
  MongoServerError, MongoServerSelectionError, MongoTopologyClosedError
} from 'mongodb'
import {
  DuplicateKeyError, IndexConflictError, IndexNotFoundError, InvalidDocumentError, InvalidIndexError, InvalidUpdateError, QueryTimeoutError,
  StoreUnavailableError
} from '../errors.js'

/**
 * The driver's and the server's errors as the Store's typed errors, so a
 * service (and the client, through the error handler) sees what the embedded
 * engine would have raised. Most refusals never get this far: both engines
 * run the same validators first, and this maps what only the server can know.
 */

// "This update cannot apply to that document": type mismatches, paths through scalars.
const UPDATE_TYPE_ERRORS = new Set([2, 14, 28, 54, 56])
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

interface WriteErrorLike { code?: number, errmsg?: string, err?: { keyValue?: unknown, errmsg?: string }, keyValue?: unknown }

/** keyValue and the message naming the index: on the error itself, or on a bulk write's first write error. */
function duplicateDetails (error: MongoServerError): { keyValue: Record<string, unknown>, message: string } {
  const raw: unknown = error instanceof MongoBulkWriteError ? error.writeErrors : undefined
  const writeError = (Array.isArray(raw) ? raw[0] : raw) as WriteErrorLike | undefined
  const keyValue = error.keyValue ?? writeError?.err?.keyValue ?? writeError?.keyValue
  const message = writeError?.errmsg ?? writeError?.err?.errmsg ?? error.message
  return { keyValue: (keyValue !== null && typeof keyValue === 'object' ? keyValue : {}) as Record<string, unknown>, message }
}

/** Throws the Store's error for `error`, or `error` itself when it is none of them (a bug, answered as a 500). */
export function translate (error: unknown, collection: string): never {
  if (isUnavailable(error)) throw new StoreUnavailableError(error)
  if (error instanceof MongoServerError) {
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
    }
    if (typeof error.code === 'number' && UPDATE_TYPE_ERRORS.has(error.code)) {
      throw new InvalidUpdateError('update', error.message)
    }
  }
  // The validators run first, so this means a value slipped past them; refused as the embedded engine would.
  if (error instanceof BSON.BSONError) throw new InvalidDocumentError('document', 'The document cannot be stored')
  throw error
}
