import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { AppParams, HostingResponses, SourceChunkParams, SourceUploadParams, StartSourceUploadBody } from '../../schemas/hosting.js'
import { ChunkBody } from '../../schemas/files.js'
import { commonErrors } from '../../services/platform/errors.js'
import { fileErrors as f } from '../../services/files/errors.js'
import { hostingErrors as e } from '../../services/hosting/errors.js'
import type { AppKind } from '../../services/hosting/records.js'
import { appParent } from '../../plugins/hosting.js'
import { readChunkBodies } from '../data/chunk-bodies.js'
import { created, ok } from '../replies.js'

// Headers and framing around a chunk; anything larger is not a chunk of this server's size.
const CHUNK_SLACK = 64 * 1024
/** What an upload session may meet once started, as the data API's record files meet it. */
const SESSION = [f.uploadSessionNotFound, f.uploadSessionExpired, f.uploadSessionAborted]
const CHUNK = [
  f.invalidChunk, f.bodyIncomplete, f.uploadNotOpen, f.uploadCompleting, f.uploadChunkInFlight,
  commonErrors.payloadTooLarge, commonErrors.unsupportedMediaType
]

/**
 * Source archives (`.tar.gz` or `.tar`) uploaded in chunks through the same
 * upload sessions as collection files: start with the size and sha256, send
 * the chunks in any order, complete; then deploy the upload by its id.
 */
const sourceUploadRoutes: FastifyPluginAsyncTypebox<{ kind: AppKind }> = async (app, { kind }) => {
  const { sources } = app.hosting
  const tags = ['hosting']
  const what = kind === 'static' ? 'StaticApp' : 'HostingApp'
  const parent = appParent(kind)
  app.routeDefaults({ parent, permission: 'hosting.deploy' })
  readChunkBodies(app, app.files.chunkSize + CHUNK_SLACK)

  app.post('/:appId/source-uploads', {
    config: { errors: [e.archiveInvalid, f.uploadInvalid, f.fileTooLarge] },
    schema: {
      operationId: `start${what}SourceUpload`,
      tags,
      summary: 'Start uploading a source archive',
      description: 'A `.tar.gz`, `.tgz` or `.tar` archive of the source tree, its size and sha256; ' +
        'the answer gives the chunk size and count. Location names the upload.',
      params: AppParams,
      body: StartSourceUploadBody,
      response: HostingResponses.sourceUploadStarted
    }
  }, async (request, reply) => created(reply, await sources.startUpload(request.scope[parent], request.body, request.caller.user.userId)))

  app.get('/:appId/source-uploads/:sessionId', {
    config: { errors: SESSION },
    schema: {
      operationId: `get${what}SourceUpload`,
      tags,
      summary: 'A source upload\'s state: the chunks still missing',
      params: SourceUploadParams,
      response: HostingResponses.sourceUpload
    }
  }, async (request) => ok(await sources.uploadStatus(request.scope[parent], request.params.sessionId)))

  app.put('/:appId/source-uploads/:sessionId/chunks/:index', {
    config: { errors: [...SESSION, ...CHUNK] },
    bodyLimit: app.files.chunkSize + CHUNK_SLACK,
    schema: {
      operationId: `put${what}SourceChunk`,
      tags,
      summary: 'Store one chunk of a source archive (application/octet-stream)',
      description: 'Exactly the chunk size, less only for the last chunk; sending a chunk again replaces it.',
      consumes: ['application/octet-stream'],
      params: SourceChunkParams,
      body: ChunkBody,
      response: HostingResponses.sourceUpload
    }
  }, async (request) => {
    const body: unknown = request.body ?? Buffer.alloc(0)
    const send = 'Send the chunk as Content-Type: application/octet-stream'
    if (!Buffer.isBuffer(body)) throw commonErrors.unsupportedMediaType({ send })
    return ok(await sources.putChunk(request.scope[parent], request.params.sessionId, request.params.index, body))
  })

  app.post('/:appId/source-uploads/:sessionId/complete', {
    config: {
      errors: [
        ...SESSION, f.uploadIncomplete, f.uploadCompleting, f.uploadChunkInFlight, f.uploadSizeMismatch, f.uploadChecksumMismatch,
        f.uploadNotOpen
      ]
    },
    schema: {
      operationId: `complete${what}SourceUpload`,
      tags,
      summary: 'Join the chunks and check the size and sha256',
      description: 'The upload can then be deployed.',
      params: SourceUploadParams,
      response: HostingResponses.sourceUpload
    }
  }, async (request) => ok(await sources.completeUpload(request.scope[parent], request.params.sessionId)))
}

export default sourceUploadRoutes
