import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import { BlobQuery, CommitParams, GitResponses, LogQuery, RepoParams, TreeQuery } from '../../schemas/git.js'
import { contentDisposition } from '../data/content-disposition.js'
import { repoOfRequest } from '../../plugins/git.js'

/** History, commits and their diffs, trees and files at any revision: all `git.read`. */
const contentRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { history } = app.git
  const tags = ['git']
  const repoOf = (request: FastifyRequest) => repoOfRequest(request).repo
  const preHandler = app.requireRepoPermission('git.read')

  app.get('/commits', {
    config: { auth: 'platform' },
    preHandler,
    schema: { operationId: 'listGitCommits', tags, summary: 'History from a revision, newest first, optionally only commits touching a path', description: 'Needs `git.read`. `ref` defaults to the default branch; `path` keeps the commits that changed that file or folder. Pages follow `nextCursor`, which stays on the history the first page saw.', params: RepoParams, querystring: LogQuery, response: GitResponses.commits }
  }, async (request) => ({ success: true as const, data: await history.log(repoOf(request), request.query) }))

  app.get('/commits/:sha', {
    config: { auth: 'platform' },
    preHandler,
    schema: { operationId: 'getGitCommit', tags, summary: 'One commit', description: 'Needs `git.read`. The id may be abbreviated (4 hex digits or more; 400 `APP_GIT_AMBIGUOUS_REF` when several match).', params: CommitParams, response: GitResponses.commit }
  }, async (request) => ({ success: true as const, data: await history.commit(repoOf(request), request.params.sha) }))

  app.get('/commits/:sha/diff', {
    config: { auth: 'platform' },
    preHandler,
    schema: { operationId: 'getGitCommitDiff', tags, summary: 'A commit\'s changes against its first parent, per file with stats and patches', description: 'Needs `git.read`. Renames are detected. Patches stop at a size limit (`truncated`); the raw diff has everything.', params: CommitParams, response: GitResponses.diff }
  }, async (request) => ({ success: true as const, data: await history.diff(repoOf(request), request.params.sha) }))

  app.get('/commits/:sha/diff.raw', {
    config: { auth: 'platform' },
    preHandler,
    schema: { operationId: 'getGitCommitRawDiff', tags, summary: 'A commit\'s unified diff as plain text', description: 'Needs `git.read`. What `git diff` prints between the first parent (or nothing, for a root commit) and the commit.', params: CommitParams, response: GitResponses.rawDiff }
  }, async (request, reply) => {
    const diff = await history.rawCommitDiff(repoOf(request), request.params.sha)
    return reply.type('text/plain; charset=utf-8').header('x-content-type-options', 'nosniff').send(diff)
  })

  app.get('/tree', {
    config: { auth: 'platform' },
    preHandler,
    schema: { operationId: 'getGitTree', tags, summary: 'A folder\'s entries at a revision', description: 'Needs `git.read`. `ref` defaults to the default branch and `path` to the root.', params: RepoParams, querystring: TreeQuery, response: GitResponses.tree }
  }, async (request) => ({ success: true as const, data: await history.tree(repoOf(request), request.query) }))

  app.get('/blob', {
    config: { auth: 'platform' },
    preHandler,
    schema: { operationId: 'getGitBlob', tags, summary: 'A file at a revision, its content inline when small', description: 'Needs `git.read`. Text comes as UTF-8, binary content as base64; past the inline limit `content` is null and the raw download serves it.', params: RepoParams, querystring: BlobQuery, response: GitResponses.blob }
  }, async (request) => ({ success: true as const, data: await history.blob(repoOf(request), request.query) }))

  app.get('/raw', {
    config: { auth: 'platform' },
    preHandler,
    schema: { operationId: 'downloadGitBlob', tags, summary: 'Download a file at a revision, streamed, whatever its size', description: 'Needs `git.read`. The Content-Type is sniffed from the content (text is text/plain, never HTML).', params: RepoParams, querystring: BlobQuery, response: GitResponses.raw }
  }, async (request, reply) => {
    const blob = await history.openBlob(repoOf(request), request.query)
    return reply.headers({
      'content-type': blob.type,
      'content-length': blob.size,
      'content-disposition': contentDisposition(blob.name, blob.type),
      'x-content-type-options': 'nosniff',
      // Repository files are served from the API's origin: nothing in them may run or load anything.
      'content-security-policy': 'default-src \'none\'; sandbox'
    }).send(blob.stream)
  })
}

export default contentRoutes
