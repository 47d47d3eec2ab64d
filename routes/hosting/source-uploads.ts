import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { AppParams, HostingResponses, SourceChunkParams, SourceUploadParams, StartSourceUploadBody } from '../../schemas/hosting.js'
import { ChunkBody } from '../../schemas/files.js'
import { AppError } from '../../services/errors.js'
import type { AppKind } from '../../services/hosting/records.js'
import { platformCaller } from '../../plugins/auth.js'
import { readChunkBodies } from '../data/chunk-bodies.js'
import { createdAt } from '../location.js'

// Headers and framing around a chunk; anything larger is not a chunk of this server's size.
const CHUNK_SLACK = 64 * 1024

/**
 * Source archives (`.tar.gz` or `.tar`) uploaded in chunks through the same
 * upload sessions as collection files: start with the size and sha256, send
 * the chunks in any order, complete; then deploy the upload by its id.
 */
const sourceUploadRoutes: FastifyPluginAsyncTypebox<{ kind: AppKind }> = async (app, { kind }) => {
  const { apps, sources } = app.hosting
  const tags = ['hosting']
  const what = kind === 'static' ? 'StaticApp' : 'HostingApp'
  const find = async (params: { projectId: string, appId: string }) => await apps.get(params.projectId, params.appId, kind)
  readChunkBodies(app, app.files.chunkSize + CHUNK_SLACK)

  app.post('/:appId/source-uploads', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('hosting.deploy'),
    schema: { operationId: `start${what}SourceUpload`, tags, summary: 'Start uploading a source archive', description: 'Needs `hosting.deploy`. A `.tar.gz`, `.tgz` or `.tar` archive of the source tree (400 `APP_HOSTING_ARCHIVE_INVALID` otherwise), its size and sha256; the answer gives the chunk size and count. Location names the upload.', params: AppParams, body: StartSourceUploadBody, response: HostingResponses.sourceUploadStarted }
  }, async (request, reply) => {
    const upload = await sources.startUpload(await find(request.params), request.body, platformCaller(request).userId)
    return reply.code(201).header('location', createdAt(request, upload.id)).send({ success: true as const, data: upload })
  })

  app.get('/:appId/source-uploads/:sessionId', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('hosting.deploy'),
    schema: { operationId: `get${what}SourceUpload`, tags, summary: 'A source upload\'s state: the chunks still missing', description: 'Needs `hosting.deploy`.', params: SourceUploadParams, response: HostingResponses.sourceUpload }
  }, async (request) => ({ success: true as const, data: await sources.uploadStatus(await find(request.params), request.params.sessionId) }))

  app.put('/:appId/source-uploads/:sessionId/chunks/:index', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('hosting.deploy'),
    bodyLimit: app.files.chunkSize + CHUNK_SLACK,
    schema: { operationId: `put${what}SourceChunk`, tags, summary: 'Store one chunk of a source archive (application/octet-stream)', description: 'Needs `hosting.deploy`. Exactly the chunk size, less only for the last chunk; sending a chunk again replaces it.', consumes: ['application/octet-stream'], params: SourceChunkParams, body: ChunkBody, response: HostingResponses.sourceUpload }
  }, async (request) => {
    const body: unknown = request.body ?? Buffer.alloc(0)
    if (!Buffer.isBuffer(body)) throw new AppError('APP_UNSUPPORTED_MEDIA_TYPE', 415, 'Send the chunk as Content-Type: application/octet-stream')
    return { success: true as const, data: await sources.putChunk(await find(request.params), request.params.sessionId, request.params.index, body) }
  })

  app.post('/:appId/source-uploads/:sessionId/complete', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('hosting.deploy'),
    schema: { operationId: `complete${what}SourceUpload`, tags, summary: 'Join the chunks and check the size and sha256', description: 'Needs `hosting.deploy`. 422 when the bytes do not match what was declared. The upload can then be deployed.', params: SourceUploadParams, response: HostingResponses.sourceUpload }
  }, async (request) => ({ success: true as const, data: await sources.completeUpload(await find(request.params), request.params.sessionId) }))
}

export default sourceUploadRoutes
