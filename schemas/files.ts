import { Type, type Static } from '@sinclair/typebox'
import { Envelope, LOCATION, withHeaders } from './envelope.js'
import { DataRecord, RecordIdParams } from './records.js'
import { DateTime } from './common.js'

const Id = Type.String({ pattern: '^[0-9A-Za-z_-]{1,64}$' })
const Sha256 = Type.String({ pattern: '^[0-9a-fA-F]{64}$', description: 'SHA-256 of the whole file, hex' })

export const FileFieldParams = Type.Object({ ...RecordIdParams.properties, field: Type.String({ pattern: '^[A-Za-z][A-Za-z0-9_]{0,63}$' }) })
export const UploadSessionParams = Type.Object({ ...FileFieldParams.properties, sessionId: Id })
/** The most chunks one upload may have: bounds the session document, which lists the chunks received. */
export const MAX_CHUNKS = 10_000
export const ChunkParams = Type.Object({ ...UploadSessionParams.properties, index: Type.Integer({ minimum: 0, maximum: MAX_CHUNKS - 1 }) })
export const FileParams = Type.Object({ ...FileFieldParams.properties, fileId: Id })
export const DownloadHeaders = Type.Object({
  range: Type.Optional(Type.String({ maxLength: 200, description: 'One range of bytes, `bytes=<first>-<last>`' })),
  'if-none-match': Type.Optional(Type.String({ maxLength: 1024, description: 'The ETag of a copy the client holds' }))
})

/** How long a file link may work, in seconds. */
export const FILE_LINK_SECONDS = { min: 10, max: 7 * 24 * 3600, default: 3600 }
export const FileLinkBody = Type.Object({
  fileId: Type.String({ pattern: '^[0-9A-Za-z_-]{1,64}$', description: 'The file of the field to link to' }),
  expiresIn: Type.Optional(Type.Integer({
    minimum: FILE_LINK_SECONDS.min,
    maximum: FILE_LINK_SECONDS.max,
    description: `Seconds the link works for: ${FILE_LINK_SECONDS.min} to ${FILE_LINK_SECONDS.max} (7 days); ${FILE_LINK_SECONDS.default} when absent`
  }))
}, { additionalProperties: false })
export const FileLinkQuery = Type.Object({
  as: Type.String({ pattern: '^[A-Za-z0-9_-]{1,2048}$', description: 'Whom the link acts for, as the server wrote it' }),
  expires: Type.Integer({ minimum: 0, description: 'When the link stops working, in Unix seconds' }),
  signature: Type.String({ pattern: '^[0-9a-f]{64}$', description: 'The server\'s HMAC-SHA256 over the file, `as` and `expires`' })
})
export const FileLink = Type.Object({
  url: Type.String({ description: 'The file\'s signed path on this API (resolve it against the API\'s origin): no Authorization header needed' }),
  expiresAt: DateTime
}, { $id: 'FileLink', description: 'A signed link to one file, acting for the caller who asked for it' })

export const StartUploadBody = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 255, description: 'The file name shown on download' }),
  size: Type.Integer({ minimum: 0, description: 'Bytes; checked against the field\'s maxSize now and against the bytes at completion' }),
  type: Type.String({ minLength: 3, maxLength: 255, description: 'What the client says it is; the stored type is sniffed from the bytes' }),
  sha256: Type.Optional(Sha256)
}, { additionalProperties: false })

export const FileDescriptor = Type.Object({
  id: Type.String(),
  name: Type.String(),
  size: Type.Integer(),
  type: Type.String({ description: 'Sniffed from the content' }),
  sha256: Type.String(),
  createdAt: DateTime
}, { $id: 'FileDescriptor', description: 'What a file field holds (an array of them when the field is multiple)' })

export const UploadSession = Type.Object({
  id: Type.String(),
  projectId: Type.String(),
  table: Type.String(),
  recordId: Type.String(),
  field: Type.String(),
  name: Type.String(),
  size: Type.Integer(),
  type: Type.String(),
  sha256: Type.Union([Type.String(), Type.Null()]),
  chunkSize: Type.Integer({ description: 'Every chunk but the last is exactly this long' }),
  chunkCount: Type.Integer(),
  received: Type.Array(Type.Integer()),
  missing: Type.Array(Type.Integer(), { description: 'Chunks still to send: what a client resumes from' }),
  status: Type.Union(['open', 'completing', 'completed', 'aborted', 'expired'].map((status) => Type.Literal(status))),
  expiresAt: DateTime,
  createdAt: DateTime,
  createdBy: Type.Union([Type.String(), Type.Null()]),
  file: Type.Union([Type.Ref(FileDescriptor), Type.Null()])
}, { $id: 'UploadSession' })

const Attached = Envelope(Type.Object({ file: Type.Ref(FileDescriptor), record: Type.Ref(DataRecord) }))

/**
 * Bodies of bytes the route reads itself: the JSON validator must not judge
 * them, so they carry no `type`, and `x-binary` marks them for the contract,
 * which declares them as binary strings.
 */
export const ChunkBody = {
  content: {
    'application/octet-stream': {
      schema: Type.Unsafe<Buffer>({ 'x-binary': true, description: 'The chunk\'s bytes: chunkSize of them, fewer only for the last chunk' })
    }
  }
}
export const MultipartBody = {
  content: {
    'multipart/form-data': {
      schema: Type.Unsafe<undefined>({
        properties: { file: { 'x-binary': true, description: 'The file (one part); its filename and Content-Type are kept' } },
        required: ['file'],
        'x-form': true
      })
    }
  }
}

const DOWNLOAD_HEADERS = {
  ETag: { type: 'string', description: 'The file\'s sha256 in quotes: send it in If-None-Match to get 304 while it is unchanged' },
  'Content-Disposition': { type: 'string', description: '`inline` for types a browser shows without running them, `attachment` otherwise; the file\'s name in `filename*`' },
  'Content-Length': { type: 'integer', description: 'Bytes in this answer' },
  'Accept-Ranges': { type: 'string', description: '`bytes`' }
}

const FileBytes = (description: string, headers: Record<string, { type: string, description: string }>) => ({
  description,
  headers,
  content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } }
})

export const FileResponses = {
  started: { 201: withHeaders(Envelope(Type.Ref(UploadSession)), LOCATION) },
  session: { 200: Envelope(Type.Ref(UploadSession)) },
  chunk: { 200: Envelope(Type.Ref(UploadSession)) },
  completed: { 200: Attached },
  uploaded: { 201: withHeaders(Attached, LOCATION) },
  download: {
    200: FileBytes('The whole file, with its sniffed Content-Type', DOWNLOAD_HEADERS),
    206: FileBytes('The bytes the Range asked for', { ...DOWNLOAD_HEADERS, 'Content-Range': { type: 'string', description: '`bytes <first>-<last>/<size>`' } }),
    304: { description: 'Not modified: If-None-Match holds the ETag', type: 'null', headers: { ETag: DOWNLOAD_HEADERS.ETag } }
  },
  deleted: { 200: Envelope(Type.Object({ id: Type.String(), deleted: Type.Literal(true), record: Type.Ref(DataRecord) })) },
  link: { 200: Envelope(Type.Ref(FileLink)) }
}

export const fileSchemas = [FileDescriptor, UploadSession, FileLink]
export type UploadSessionT = Static<typeof UploadSession>
