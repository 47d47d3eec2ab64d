import { PassThrough, pipeline, type Readable } from 'node:stream'
import { createGunzip } from 'node:zlib'
import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { commonErrors } from '../../services/platform/errors.js'
import type { GitService } from '../../services/git/access.js'
import { gitErrors } from '../../services/git/errors.js'
import { stripGitSuffix } from '../../services/git/names.js'
import { gitProtocol, serviceAnnouncement, wantsV2 } from '../../services/git/transport.js'
import { toErrorReply } from '../../plugins/errors.js'

const Params = Type.Object({ projectId: Type.String({ maxLength: 64 }), repoSlug: Type.String({ maxLength: 104 }) })
const InfoRefsQuery = Type.Object({ service: Type.Optional(Type.String({ maxLength: 32 })) })
const SERVICES = new Set<string>(['git-upload-pack', 'git-receive-pack'])
const NO_CACHE = { 'cache-control': 'no-cache, max-age=0, must-revalidate', pragma: 'no-cache', expires: 'Fri, 01 Jan 1980 00:00:00 GMT' }
const STDERR_KEPT = 4096

/**
 * Git's smart HTTP protocol, in its own context: request bodies are handed
 * through as streams (no JSON parser, no body limit; pushes can be hundreds of
 * MB), git's output streams back as it comes, and errors are plain text with
 * a Basic challenge on 401, which is what git shows its user and what makes
 * credential helpers ask.
 */
const smartHttpRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { transport } = app.git
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('*', (_request, payload, done) => { done(null, payload) })
  if (!app.git.enabled) app.addHook('onRequest', async () => { throw gitErrors.hostingDisabled() })

  app.setErrorHandler((error: Error, request, reply) => {
    const { status, body, internal } = toErrorReply(error)
    if (internal) request.log.error({ err: error }, 'git request failed')
    if (status === 401) void reply.header('www-authenticate', 'Basic realm="Plinth", charset="UTF-8"')
    return reply.code(status).type('text/plain; charset=utf-8').send(`${body.message} (${body.code})\n`)
  })

  /** The repository, once the caller may use `service` on it. */
  const authorized = async (request: FastifyRequest, service: GitService) => {
    const params = request.params as { projectId: string, repoSlug: string }
    return await app.git.authorize(request.caller.git, params.projectId, stripGitSuffix(params.repoSlug), service)
  }

  /** Streams git's output as the answer, and stops git when the client goes away first. */
  type Child = ReturnType<typeof transport.serve>
  const streamFrom = (request: FastifyRequest, reply: FastifyReply, child: Child, prefix: Buffer | null): FastifyReply => {
    let stderr = ''
    child.stderr.on('data', (chunk: Buffer) => { if (stderr.length < STDERR_KEPT) stderr += chunk.toString('utf8') })
    child.once('close', (code) => {
      if (code !== 0 && code !== null) request.log.info({ code, stderr: stderr.trim() }, 'git exited with an error')
    })
    // Git's output not read to its end means the answer was cut off (or never wanted, as for HEAD): git would block on it.
    reply.raw.once('close', () => { if (child.exitCode === null && !child.stdout.readableEnded) child.kill('SIGKILL') })
    const out = new PassThrough()
    if (prefix !== null) out.write(prefix)
    child.stdout.pipe(out)
    return reply.send(out)
  }

  app.get('/:projectId/:repoSlug/info/refs', {
    exposeHeadRoute: false,
    config: { auth: 'git' },
    schema: { hide: true, params: Params, querystring: InfoRefsQuery }
  }, async (request, reply) => {
    const name = request.query.service
    if (name === undefined || !SERVICES.has(name)) throw gitErrors.smartHttpOnly()
    const service = name.slice(4) as GitService
    const { repo, policy } = await authorized(request, service)
    const protocol = gitProtocol(request.headers['git-protocol'])
    const child = transport.advertise(repo, service, protocol, policy)
    child.stdin.end()
    void reply.headers({ ...NO_CACHE, 'content-type': `application/x-git-${service}-advertisement` })
    // Protocol v2 opens with its capability list; v0 first names the service in a pkt-line.
    return streamFrom(request, reply, child, wantsV2(protocol) && service === 'upload-pack' ? null : serviceAnnouncement(service))
  })

  for (const service of ['upload-pack', 'receive-pack'] as const) {
    app.post(`/:projectId/:repoSlug/git-${service}`, {
      config: { auth: 'git' },
      schema: { hide: true, params: Params }
    }, async (request, reply) => {
      const type = (request.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase()
      if (type !== `application/x-git-${service}-request`) {
        throw commonErrors.unsupportedMediaType({ send: `Send Content-Type: application/x-git-${service}-request` })
      }
      const encoding = (request.headers['content-encoding'] ?? 'identity').toLowerCase()
      if (!['identity', 'gzip', 'x-gzip'].includes(encoding)) {
        throw commonErrors.unsupportedMediaType({ send: 'Content-Encoding may be gzip or none' })
      }
      const { repo, policy } = await authorized(request, service)
      const child = transport.serve(repo, service, gitProtocol(request.headers['git-protocol']), policy)
      const body = request.body as Readable
      const stages: NodeJS.ReadableStream[] = encoding === 'identity' ? [body] : [body, createGunzip()]
      // A broken or cut-off request body (or a bad gzip stream) ends git at once; the answer then ends short.
      pipeline([...stages, child.stdin] as unknown as [Readable, NodeJS.WritableStream], (error) => {
        if (error !== undefined && error !== null && child.exitCode === null) child.kill('SIGKILL')
      })
      void reply.headers({ ...NO_CACHE, 'content-type': `application/x-git-${service}-result` })
      return streamFrom(request, reply, child, null)
    })
  }
}

export default smartHttpRoutes
