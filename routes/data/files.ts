import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import multipart from '@fastify/multipart'
import {
  ChunkBody, DownloadHeaders, ChunkParams, FileFieldParams, FILE_LINK_SECONDS, FileLinkBody, FileLinkQuery, FileParams, FileResponses,
  MultipartBody, StartUploadBody, UploadSessionParams
} from '../../schemas/files.js'
import { collectionErrors as c } from '../../services/collections/errors.js'
import { commonErrors } from '../../services/platform/errors.js'
import { fileErrors as f } from '../../services/files/errors.js'
import { MAX_MULTIPART_SIZE } from '../../plugins/files.js'
import { sendFile } from './file-download.js'
import { readChunkBodies } from './chunk-bodies.js'
import { FORM_LIMITS, formFile } from './multipart-file.js'
import { created, ok } from '../replies.js'

const tags = ['data']
// Headers and framing around a chunk; anything larger is not a chunk of this server's size.
const CHUNK_SLACK = 64 * 1024

/** Every file route names a record and one of its file fields. */
const LOCATED = [c.recordNotFound, c.fieldNotFound]
/** An upload session once started. */
const SESSION = [...LOCATED, f.uploadSessionNotFound, f.uploadSessionExpired, f.uploadSessionAborted]
/** Writing the record's file field: its type and count, the rule's check, a record that kept changing. */
const ATTACH = [c.fileTypeNotAllowed, c.tooManyFiles, c.ruleCheckFailed, c.writeConflict]

/**
 * `/api/p/:projectId/:table/:id/files/:field…`: a record's files. Uploads run
 * under the collection's upload rule, downloads under download, deletions
 * under fileDelete; the service resolves them per call like the data routes.
 */
const fileRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const files = app.files.recordFiles
  const chunkLimit = app.files.chunkSize + CHUNK_SLACK
  const target = (params: { projectId: string, table: string, id: string, field: string }) =>
    ({ projectId: params.projectId, table: params.table, id: params.id, field: params.field })

  readChunkBodies(app, chunkLimit)
  await app.register(multipart, { limits: { ...FORM_LIMITS, fileSize: MAX_MULTIPART_SIZE + 1 } })

  const sessions = '/:table/:id/files/:field/upload-sessions'

  app.post(sessions, {
    config: { collectionMethod: 'upload', errors: [...LOCATED, f.uploadInvalid, f.fileTooLarge, c.tooManyFiles] },
    schema: {
      operationId: 'startUpload',
      tags,
      summary: 'Start a resumable upload into a file field; chunks then go in any order',
      description: 'Under the collection\'s upload rule. The answer gives the chunk size, the chunk count and when the session ' +
        'expires; Location names the session.',
      params: FileFieldParams,
      body: StartUploadBody,
      response: FileResponses.started
    }
  }, async (request, reply) => created(reply, await files.startUpload(target(request.params), request.caller.data, request.body)))

  app.get(`${sessions}/:sessionId`, {
    config: { collectionMethod: 'upload', errors: SESSION },
    schema: {
      operationId: 'getUpload',
      tags,
      summary: 'An upload\'s state: which chunks arrived and which are missing, to resume from',
      description: 'Which chunks arrived and which are missing, to resume after a dropped connection.',
      params: UploadSessionParams,
      response: FileResponses.session
    }
  }, async (request) => ok(await files.uploadStatus(target(request.params), request.caller.data, request.params.sessionId)))

  app.put(`${sessions}/:sessionId/chunks/:index`, {
    config: {
      collectionMethod: 'upload',
      errors: [
        ...SESSION, f.invalidChunk, f.bodyIncomplete, f.uploadNotOpen, commonErrors.payloadTooLarge, commonErrors.unsupportedMediaType
      ]
    },
    bodyLimit: chunkLimit,
    schema: {
      operationId: 'putUploadChunk',
      tags,
      summary: 'Store one chunk (application/octet-stream); sending a chunk again replaces it',
      description: 'The chunk\'s bytes as `application/octet-stream`: exactly the chunk size, less only for the last chunk. ' +
        'Chunks may come in any order; sending one again replaces it.',
      consumes: ['application/octet-stream'],
      params: ChunkParams,
      body: ChunkBody,
      response: FileResponses.chunk
    }
  }, async (request) => {
    const body: unknown = request.body ?? Buffer.alloc(0)
    if (!Buffer.isBuffer(body)) {
      throw commonErrors.unsupportedMediaType({ send: 'Send the chunk as Content-Type: application/octet-stream' })
    }
    const { sessionId, index } = request.params
    return ok(await files.putChunk(target(request.params), request.caller.data, sessionId, index, body))
  })

  app.post(`${sessions}/:sessionId/complete`, {
    config: {
      collectionMethod: 'upload',
      errors: [
        ...SESSION, f.uploadIncomplete, f.uploadCompleting, f.uploadChunkInFlight, f.uploadSizeMismatch, f.uploadChecksumMismatch, ...ATTACH
      ]
    },
    schema: {
      operationId: 'completeUpload',
      tags,
      summary: 'Join the chunks, verify size and sha256, sniff the type and attach the file to the record',
      description: 'Checks the total size and the declared sha256 (422 on a mismatch), sniffs the type from the content (the ' +
        'field\'s `allowedTypes` may refuse it with 415) and attaches the file to the record atomically.',
      params: UploadSessionParams,
      response: FileResponses.completed
    }
  }, async (request) => ok(await files.completeUpload(target(request.params), request.caller.data, request.params.sessionId)))

  app.delete(`${sessions}/:sessionId`, {
    config: { collectionMethod: 'upload', errors: [...SESSION, f.uploadNotOpen, f.uploadCompleting] },
    schema: {
      operationId: 'abortUpload',
      tags,
      summary: 'Abort an upload and drop its chunks',
      description: 'Drops the session and its chunks.',
      params: UploadSessionParams,
      response: FileResponses.session
    }
  }, async (request) => ok(await files.abortUpload(target(request.params), request.caller.data, request.params.sessionId)))

  app.post('/:table/:id/files/:field', {
    config: {
      collectionMethod: 'upload',
      errors: [
        ...LOCATED, commonErrors.unsupportedMediaType, f.multipartInvalid, f.fileRequired, f.multipartTooManyParts, f.fileTooLarge,
        ...ATTACH
      ]
    },
    schema: {
      operationId: 'uploadFile',
      tags,
      summary: `Upload a small file (up to ${MAX_MULTIPART_SIZE} bytes and the field's maxSize) in one multipart/form-data request`,
      description: 'One file part in a `multipart/form-data` body, with at most 10 other fields (ignored). Nothing is stored ' +
        'unless the whole form arrives well-formed. Location names the file.',
      consumes: ['multipart/form-data'],
      params: FileFieldParams,
      body: MultipartBody,
      response: FileResponses.uploaded
    }
  }, async (request, reply) => {
    if (!request.isMultipart()) throw commonErrors.unsupportedMediaType({ send: 'Send the file as multipart/form-data' })
    const { name, type, body } = await formFile(request)
    const form = { name, type, body, maxSize: MAX_MULTIPART_SIZE }
    const uploaded = await files.uploadWhole(target(request.params), request.caller.data, form)
    return created(reply, uploaded, { id: uploaded.file.id })
  })

  app.get('/:table/:id/files/:field/:fileId', {
    config: { collectionMethod: 'download', errors: [...LOCATED, f.fileNotFound, f.rangeNotSatisfiable] },
    schema: {
      operationId: 'downloadFile',
      tags,
      summary: 'Download a file: Range for parts (206), If-None-Match with the ETag (304); served with its sniffed type',
      description: 'Under the collection\'s download rule. Streams the file with its sniffed type, `Range` for parts (206, or 416 ' +
        'past the end) and `If-None-Match` against the ETag (304). Errors are JSON.',
      params: FileParams,
      headers: DownloadHeaders,
      response: FileResponses.download
    }
  }, async (request, reply) => {
    const { fileId } = request.params
    const file = await files.download(target(request.params), request.caller.data, fileId)
    return await sendFile(request, reply, file, async (range) => await files.open(target(request.params), fileId, range))
  })

  app.post('/:table/:id/files/:field/links', {
    config: { collectionMethod: 'download', errors: [...LOCATED, f.fileNotFound, f.linkInvalid] },
    schema: {
      operationId: 'createFileLink',
      tags,
      summary: 'A signed link to one of the field\'s files that works without an Authorization header (an `<img src>`), for a while',
      description: 'Under the collection\'s download rule. The link acts for the caller who asks for it: whoever uses it downloads ' +
        'as that caller, whose credential must still hold (a user deleted, disabled or signed out everywhere, or a revoked PAT, ' +
        'ends it) and whom the download rule, as it stands then, must still let through. It names this one file only.',
      params: FileFieldParams,
      body: FileLinkBody,
      response: FileResponses.link
    }
  }, async (request) => {
    const { fileId } = request.body
    await files.download(target(request.params), request.caller.data, fileId)
    const seconds = request.body.expiresIn ?? FILE_LINK_SECONDS.default
    const link = await app.fileLinks.sign(target(request.params), fileId, request.caller.data, seconds)
    const query = new URLSearchParams({ as: link.as, expires: String(link.expires), signature: link.signature })
    const path = `${request.url.split('?')[0]}/${encodeURIComponent(fileId)}`
    return ok({ url: `${path}?${query.toString()}`, expiresAt: link.expiresAt.toISOString() })
  })

  app.get('/:table/:id/files/:field/links/:fileId', {
    config: { auth: 'none', collectionMethod: 'download', errors: [...LOCATED, f.fileNotFound, f.linkInvalid, f.rangeNotSatisfiable] },
    schema: {
      operationId: 'downloadFileByLink',
      tags,
      summary: 'Download a file through a signed link (createFileLink): no credential; as downloadFile otherwise',
      description: 'The link is checked (this file, not altered, not expired), then the download runs as the caller who made it, ' +
        'under the download rule as it stands now. `Range` and `If-None-Match` work as on downloadFile. Errors are JSON.',
      params: FileParams,
      querystring: FileLinkQuery,
      headers: DownloadHeaders,
      response: FileResponses.download
    }
  }, async (request, reply) => {
    const { fileId } = request.params
    const caller = await app.fileLinks.callerOf(target(request.params), fileId, request.query)
    const file = await files.download(target(request.params), caller, fileId)
    return await sendFile(request, reply, file, async (range) => await files.open(target(request.params), fileId, range))
  })

  app.delete('/:table/:id/files/:field/:fileId', {
    config: { collectionMethod: 'fileDelete', errors: [...LOCATED, f.fileNotFound, c.ruleCheckFailed, c.writeConflict] },
    schema: {
      operationId: 'deleteFile',
      tags,
      summary: 'Remove a file from the record and from storage',
      description: 'Under the collection\'s fileDelete rule. Removes the file from the record and from storage.',
      params: FileParams,
      response: FileResponses.deleted
    }
  }, async (request) => {
    const { fileId } = request.params
    const record = await files.deleteFile(target(request.params), request.caller.data, fileId)
    return ok({ id: fileId, deleted: true as const, record })
  })
}

export default fileRoutes
