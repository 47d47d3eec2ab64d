import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { ChunkBody, DownloadHeaders } from '../../schemas/files.js'
import { ListQuery } from '../../schemas/tracker.js'
import { StartAttachmentBody } from '../../schemas/tracker-work-items.js'
import {
  AttachmentChunkParams, AttachmentParams, AttachmentUploadParams, ItemParams, TrackerResponses
} from '../../schemas/tracker-routes.js'
import { commonErrors } from '../../services/platform/errors.js'
import { fileErrors as f } from '../../services/files/errors.js'
import { trackerErrors as e } from '../../services/tracker/errors.js'
import { readChunkBodies } from '../data/chunk-bodies.js'
import { sendFile } from '../data/file-download.js'
import { created, deleted, ok } from '../replies.js'
import { ITEM, LIST, WRITE } from './refusals.js'

// Headers and framing around a chunk; anything larger is not a chunk of this server's size.
const CHUNK_SLACK = 64 * 1024
/** What an upload session may meet once started, as the data API's record files meet it. */
const SESSION = [...ITEM, f.uploadSessionNotFound, f.uploadSessionExpired, f.uploadSessionAborted]
const CHUNK = [f.invalidChunk, f.bodyIncomplete, f.uploadNotOpen, commonErrors.payloadTooLarge, commonErrors.unsupportedMediaType]

/**
 * `…/work-items/:itemId/attachments`: files on an item, uploaded as the data
 * API's record files are (resumable sessions: start, chunks in any order,
 * complete, which checks size and sha256) and downloaded the same way.
 */
const attachmentRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { attachments } = app.tracker
  const tags = ['tracker']
  const chunkLimit = app.files.chunkSize + CHUNK_SLACK
  readChunkBodies(app, chunkLimit)

  app.get('', {
    config: { permission: 'tracker.read', errors: [...ITEM, ...LIST] },
    schema: {
      operationId: 'listTrackerAttachments',
      tags,
      summary: 'An item\'s attachments',
      params: ItemParams,
      querystring: ListQuery,
      response: TrackerResponses.attachmentList
    }
  }, async (request) => ok(await attachments.list(request.scope.trackerProject, request.params.itemId, request.query)))

  app.post('/upload-sessions', {
    config: { permission: 'tracker.write', errors: [...ITEM, e.invalidValue, e.limitReached, f.uploadInvalid, f.fileTooLarge, ...WRITE] },
    schema: {
      operationId: 'startTrackerAttachmentUpload',
      tags,
      summary: 'Start a resumable upload of an attachment; chunks then go in any order',
      description: 'The answer gives the chunk size, the chunk count and when the session expires; Location names the session.',
      params: ItemParams,
      body: StartAttachmentBody,
      response: TrackerResponses.uploadStarted
    }
  }, async (request, reply) => created(reply, await attachments.start(request.scope.trackerProject, request.params.itemId, request.body)))

  app.get('/upload-sessions/:sessionId', {
    config: { permission: 'tracker.write', errors: SESSION },
    schema: {
      operationId: 'getTrackerAttachmentUpload',
      tags,
      summary: 'An upload\'s state: which chunks arrived and which are missing, to resume from',
      params: AttachmentUploadParams,
      response: TrackerResponses.upload
    }
  }, async (request) => ok(await attachments.status(request.scope.trackerProject, request.params.itemId, request.params.sessionId)))

  app.put('/upload-sessions/:sessionId/chunks/:index', {
    config: {
      permission: 'tracker.write',
      errors: [...SESSION, ...CHUNK, ...WRITE]
    },
    bodyLimit: chunkLimit,
    schema: {
      operationId: 'putTrackerAttachmentChunk',
      tags,
      summary: 'Store one chunk (application/octet-stream); sending a chunk again replaces it',
      description: 'Exactly the chunk size, less only for the last chunk.',
      consumes: ['application/octet-stream'],
      params: AttachmentChunkParams,
      body: ChunkBody,
      response: TrackerResponses.upload
    }
  }, async (request) => {
    const body: unknown = request.body ?? Buffer.alloc(0)
    if (!Buffer.isBuffer(body)) throw commonErrors.unsupportedMediaType({ send: 'Unsupported Content-Type; send application/octet-stream' })
    const { itemId, sessionId, index } = request.params
    return ok(await attachments.putChunk(request.scope.trackerProject, itemId, sessionId, index, body))
  })

  app.post('/upload-sessions/:sessionId/complete', {
    config: {
      permission: 'tracker.write',
      errors: [
        ...SESSION, f.uploadIncomplete, f.uploadCompleting, f.uploadChunkInFlight, f.uploadSizeMismatch, f.uploadChecksumMismatch, ...WRITE
      ]
    },
    schema: {
      operationId: 'completeTrackerAttachmentUpload',
      tags,
      summary: 'Join the chunks, verify size and sha256, and attach the file to the item',
      description: 'Completing twice attaches the file once. Written to the item\'s activity.',
      params: AttachmentUploadParams,
      response: TrackerResponses.attachment
    }
  }, async (request) => ok(await attachments.complete(request.scope.trackerProject, request.params.itemId, request.params.sessionId)))

  app.delete('/upload-sessions/:sessionId', {
    config: { permission: 'tracker.write', errors: [...SESSION, f.uploadNotOpen] },
    schema: {
      operationId: 'abortTrackerAttachmentUpload',
      tags,
      summary: 'Abort an upload and drop its chunks',
      params: AttachmentUploadParams,
      response: TrackerResponses.deleted
    }
  }, async (request) => {
    await attachments.abort(request.scope.trackerProject, request.params.itemId, request.params.sessionId)
    return deleted(request.params.sessionId)
  })

  app.get('/:attachmentId', {
    config: { permission: 'tracker.read', errors: [...ITEM, e.attachmentNotFound, f.fileNotFound, f.rangeNotSatisfiable] },
    schema: {
      operationId: 'downloadTrackerAttachment',
      tags,
      summary: 'Download an attachment: Range for parts (206), If-None-Match with the ETag (304)',
      description: 'Streamed with its sniffed type, as record files are. Errors are JSON.',
      params: AttachmentParams,
      headers: DownloadHeaders,
      response: TrackerResponses.download
    }
  }, async (request, reply) => {
    const { itemId, attachmentId } = request.params
    const scope = request.scope.trackerProject
    const attachment = await attachments.get(scope, itemId, attachmentId)
    return await sendFile(request, reply, attachment, async (range) => await attachments.open(scope, itemId, attachmentId, range))
  })

  app.delete('/:attachmentId', {
    config: { permission: 'tracker.write', errors: [...ITEM, e.attachmentNotFound, e.notYours, ...WRITE] },
    schema: {
      operationId: 'deleteTrackerAttachment',
      tags,
      summary: 'Remove an attachment (its uploader or an admin), and its bytes',
      params: AttachmentParams,
      response: TrackerResponses.deleted
    }
  }, async (request) => {
    await attachments.delete(request.scope.trackerProject, request.params.itemId, request.params.attachmentId)
    return deleted(request.params.attachmentId)
  })
}

export default attachmentRoutes
