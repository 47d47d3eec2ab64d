import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { BlobQuery, CommitParams, GitResponses, LogQuery, RepoParams, TreeQuery } from '../../schemas/git.js'
import { commonErrors } from '../../services/platform/errors.js'
import { gitErrors } from '../../services/git/errors.js'
import { contentDisposition } from '../data/content-disposition.js'
import { ok } from '../replies.js'

/** What reading at a revision may meet: a revision or path that is no good, or names nothing. */
const AT_REVISION = [gitErrors.invalidRef, gitErrors.ambiguousRef, gitErrors.notACommit, gitErrors.refNotFound]
const AT_PATH = [...AT_REVISION, gitErrors.invalidPath, gitErrors.pathNotFound]

/** History, commits and their diffs, trees and files at any revision: all `git.read`. */
const contentRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { history } = app.git
  const tags = ['git']
  app.routeDefaults({ permission: 'git.read' })

  app.get('/commits', {
    config: { errors: [...AT_PATH, commonErrors.invalidCursor] },
    schema: {
      operationId: 'listGitCommits',
      tags,
      summary: 'History from a revision, newest first, optionally only commits touching a path',
      description: '`ref` defaults to the default branch; `path` keeps the commits that changed that file or folder. ' +
        'Pages follow `nextCursor`, which stays on the history the first page saw.',
      params: RepoParams,
      querystring: LogQuery,
      response: GitResponses.commits
    }
  }, async (request) => ok(await history.log(request.scope.repository, request.query)))

  app.get('/commits/:sha', {
    config: { errors: AT_REVISION },
    schema: {
      operationId: 'getGitCommit',
      tags,
      summary: 'One commit',
      description: 'The id may be abbreviated (4 hex digits or more).',
      params: CommitParams,
      response: GitResponses.commit
    }
  }, async (request) => ok(await history.commit(request.scope.repository, request.params.sha)))

  app.get('/commits/:sha/diff', {
    config: { errors: AT_REVISION },
    schema: {
      operationId: 'getGitCommitDiff',
      tags,
      summary: 'A commit\'s changes against its first parent, per file with stats and patches',
      description: 'Renames are detected. Patches stop at a size limit (`truncated`); the raw diff has everything.',
      params: CommitParams,
      response: GitResponses.diff
    }
  }, async (request) => ok(await history.diff(request.scope.repository, request.params.sha)))

  app.get('/commits/:sha/diff.raw', {
    config: { errors: [...AT_REVISION, gitErrors.outputTooLarge] },
    schema: {
      operationId: 'getGitCommitRawDiff',
      tags,
      summary: 'A commit\'s unified diff as plain text',
      description: 'What `git diff` prints between the first parent (or nothing, for a root commit) and the commit.',
      params: CommitParams,
      response: GitResponses.rawDiff
    }
  }, async (request, reply) => {
    const diff = await history.rawCommitDiff(request.scope.repository, request.params.sha)
    return reply.type('text/plain; charset=utf-8').header('x-content-type-options', 'nosniff').send(diff)
  })

  app.get('/tree', {
    config: { errors: [...AT_PATH, gitErrors.notAFolder] },
    schema: {
      operationId: 'getGitTree',
      tags,
      summary: 'A folder\'s entries at a revision',
      description: '`ref` defaults to the default branch and `path` to the root.',
      params: RepoParams,
      querystring: TreeQuery,
      response: GitResponses.tree
    }
  }, async (request) => ok(await history.tree(request.scope.repository, request.query)))

  app.get('/blob', {
    config: { errors: [...AT_PATH, gitErrors.notAFile] },
    schema: {
      operationId: 'getGitBlob',
      tags,
      summary: 'A file at a revision, its content inline when small',
      description: 'Text comes as UTF-8, binary content as base64; past the inline limit `content` is null and the raw download serves it.',
      params: RepoParams,
      querystring: BlobQuery,
      response: GitResponses.blob
    }
  }, async (request) => ok(await history.blob(request.scope.repository, request.query)))

  app.get('/raw', {
    config: { errors: [...AT_PATH, gitErrors.notAFile] },
    schema: {
      operationId: 'downloadGitBlob',
      tags,
      summary: 'Download a file at a revision, streamed, whatever its size',
      description: 'The Content-Type is sniffed from the content (text is text/plain, never HTML).',
      params: RepoParams,
      querystring: BlobQuery,
      response: GitResponses.raw
    }
  }, async (request, reply) => {
    const blob = await history.openBlob(request.scope.repository, request.query)
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
