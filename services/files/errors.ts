import { errorCatalogue, type ErrorDetails } from '../platform/errors.js'

/**
 * The codes of upload sessions and stored files, which every family that
 * takes files answers alike (record files, tracker attachments, hosting
 * sources), declared once so converted routes can list them in
 * `config.errors`; the services under services/files throw them by name.
 */
export const fileErrors = errorCatalogue('files', {
  uploadInvalid: {
    code: 'APP_UPLOAD_INVALID',
    status: 400,
    message: ({ why }: { why: string, details?: ErrorDetails }) => why,
    details: ({ details }) => details,
    description: 'the upload\'s name, type, size or sha256 is not valid'
  },
  invalidChunk: {
    code: 'APP_INVALID_CHUNK',
    status: 400,
    message: ({ why }: { why: string, details?: ErrorDetails }) => why,
    details: ({ details }) => details,
    description: 'the chunk index is out of range, or the chunk is not the chunk size (the last one may be shorter)'
  },
  invalidFileKey: {
    code: 'APP_INVALID_FILE_KEY',
    status: 400,
    message: 'File keys are segments of letters, digits, _ or - separated by /',
    description: 'a file key is not segments of letters, digits, _ or - separated by /'
  },
  multipartInvalid: {
    code: 'APP_MULTIPART_INVALID',
    status: 400,
    message: 'The multipart/form-data body is malformed or ends early',
    description: 'the multipart/form-data body is malformed (no boundary, broken part headers) or ends early'
  },
  fileRequired: { code: 'APP_FILE_REQUIRED', status: 400, message: 'The form has no file part', description: 'the form has no file part' },
  bodyIncomplete: { code: 'APP_BODY_INCOMPLETE', status: 400, message: 'The request ended before its body arrived', description: 'the request ended before its body arrived' },
  uploadSessionNotFound: { code: 'APP_UPLOAD_SESSION_NOT_FOUND', status: 404, message: 'Upload session not found', description: 'no such upload session here' },
  fileNotFound: { code: 'APP_FILE_NOT_FOUND', status: 404, message: (params?: { why: string }) => params?.why ?? 'File not found', description: 'the file\'s bytes are not stored (any more)' },
  uploadCompleting: {
    code: 'APP_UPLOAD_COMPLETING',
    status: 409,
    message: 'The upload is being completed by another request',
    description: 'another request is completing the upload'
  },
  uploadChunkInFlight: {
    code: 'APP_UPLOAD_CHUNK_IN_FLIGHT',
    status: 409,
    message: 'A chunk is still being written; complete once every send has answered',
    description: 'a chunk is still being written: complete once every send has answered'
  },
  uploadIncomplete: {
    code: 'APP_UPLOAD_INCOMPLETE',
    status: 409,
    message: ({ missing }: { missing: number[] }) => `${missing.length} chunk(s) are missing`,
    details: ({ missing }) => ({ missing }),
    description: 'chunks are missing: `details.missing` lists them'
  },
  uploadNotOpen: {
    code: 'APP_UPLOAD_NOT_OPEN',
    status: 409,
    message: ({ status }: { status: string }) => status === 'completed' ? 'The upload is already completed' : `The upload is ${status}; it takes no more chunks`,
    description: 'the upload is completing or completed and takes no more chunks'
  },
  uploadSessionExpired: { code: 'APP_UPLOAD_SESSION_EXPIRED', status: 410, message: 'The upload session has expired; start a new one', description: 'the upload session expired: start a new one' },
  uploadSessionAborted: { code: 'APP_UPLOAD_SESSION_ABORTED', status: 410, message: 'The upload session was aborted; start a new one', description: 'the upload session was aborted: start a new one' },
  fileTooLarge: {
    code: 'APP_FILE_TOO_LARGE',
    status: 413,
    message: ({ limit }: { limit: number }) => `The file is larger than ${limit} bytes`,
    details: ({ limit }) => ({ limit }),
    description: 'the file is larger than allowed: `details.limit` says how large it may be'
  },
  multipartTooManyParts: {
    code: 'APP_MULTIPART_TOO_MANY_PARTS',
    status: 413,
    message: ({ limit }: { limit: number }) => `A form carries one file and at most ${limit} other fields`,
    details: ({ limit }) => ({ limit }),
    description: 'the form carries a second file or more other fields than `details.limit`'
  },
  linkInvalid: {
    code: 'APP_FILE_LINK_INVALID',
    status: 403,
    message: 'The file link is not valid: altered, expired, or its maker may no longer download the file; ask for a new one',
    description: 'the signed file link was altered or has expired, or the caller it acts for is gone or signed out'
  },
  rangeNotSatisfiable: {
    code: 'APP_RANGE_NOT_SATISFIABLE',
    status: 416,
    message: ({ size }: { size: number }) => `The file has ${size} bytes`,
    details: ({ size }) => ({ limit: size }),
    description: 'the Range lies outside the file; Content-Range gives its size'
  },
  uploadSizeMismatch: {
    code: 'APP_UPLOAD_SIZE_MISMATCH',
    status: 422,
    message: ({ expected, actual }: { expected: number, actual: number }) => `The upload is ${actual} bytes, not the declared ${expected}`,
    details: ({ expected, actual }) => ({ expected, actual }),
    description: 'the bytes received are not the size declared'
  },
  uploadChecksumMismatch: {
    code: 'APP_UPLOAD_CHECKSUM_MISMATCH',
    status: 422,
    message: 'The upload does not match the declared sha256',
    details: ({ expected, actual }: { expected: string, actual: string }) => ({ expected, actual }),
    description: 'the bytes received do not match the sha256 declared'
  }
})
