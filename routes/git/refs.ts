import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { CreateBranchBody, CreateTagBody, GitResponses, RefNameQuery, RepoParams } from '../../schemas/git.js'
import { gitErrors } from '../../services/git/errors.js'
import { created, deleted, ok } from '../replies.js'
import { writeLevelOf } from './actor.js'

/** What starting a ref at a revision may meet. */
const REF_CREATION = [
  gitErrors.invalidRefName, gitErrors.invalidRef, gitErrors.refNotFound, gitErrors.ambiguousRef, gitErrors.notACommit, gitErrors.refConflict
]

/** What deleting a branch may meet. */
const BRANCH_DELETION = [
  gitErrors.invalidRefName, gitErrors.branchNotFound, gitErrors.defaultBranch, gitErrors.branchProtected, gitErrors.refConflict
]

/** Branches and tags. Deletes name the ref in `?name=`, so names with slashes need no escaping in the path. */
const refRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { refs } = app.git
  const tags = ['git']

  app.get('/branches', {
    config: { permission: 'git.read' },
    schema: {
      operationId: 'listGitBranches',
      tags,
      summary: 'Branches with the commit each points at',
      description: 'Marks the default branch and the branches a protected-branch rule matches.',
      params: RepoParams,
      response: GitResponses.branches
    }
  }, async (request) => ok(await refs.branches(request.scope.repository)))

  app.post('/branches', {
    config: { permission: 'git.write', errors: [...REF_CREATION, gitErrors.branchProtected] },
    schema: {
      operationId: 'createGitBranch',
      tags,
      summary: 'Create a branch from a branch, tag or commit',
      description: '`from` defaults to the default branch. Names follow `git check-ref-format`; ' +
        'a protected branch the caller may not push to is refused.',
      params: RepoParams,
      body: CreateBranchBody,
      response: GitResponses.branchCreated
    }
  }, async (request, reply) => {
    const branch = await refs.createBranch(request.scope.repository, writeLevelOf(request), request.body)
    return created(reply, branch, { id: branch.name })
  })

  app.delete('/branches', {
    config: { permission: 'git.write', errors: BRANCH_DELETION },
    schema: {
      operationId: 'deleteGitBranch',
      tags,
      summary: 'Delete a branch named in ?name=',
      description: 'The default branch cannot be deleted, nor a protected branch whose rule forbids it.',
      params: RepoParams,
      querystring: RefNameQuery,
      response: GitResponses.deleted
    }
  }, async (request) => {
    await refs.deleteBranch(request.scope.repository, writeLevelOf(request), request.query.name)
    return deleted(request.query.name)
  })

  app.get('/tags', {
    config: { permission: 'git.read' },
    schema: {
      operationId: 'listGitTags',
      tags,
      summary: 'Tags, lightweight and annotated',
      description: 'Each with the commit it points at; annotated tags with their message and tagger.',
      params: RepoParams,
      response: GitResponses.tags
    }
  }, async (request) => ok(await refs.tags(request.scope.repository)))

  app.post('/tags', {
    config: { permission: 'git.write', errors: [...REF_CREATION, gitErrors.tagProtected] },
    schema: {
      operationId: 'createGitTag',
      tags,
      summary: 'Create a tag; annotated when a message is given',
      description: '`target` defaults to the default branch; with `message` the tag is annotated, with the caller as tagger.',
      params: RepoParams,
      body: CreateTagBody,
      response: GitResponses.tagCreated
    }
  }, async (request, reply) => {
    const signature = await app.git.signature(request.caller.user.userId)
    const tag = await refs.createTag(request.scope.repository, writeLevelOf(request), signature, request.body)
    return created(reply, tag, { id: tag.name })
  })

  app.delete('/tags', {
    config: {
      permission: 'git.write',
      errors: [gitErrors.invalidRefName, gitErrors.tagNotFound, gitErrors.tagProtected, gitErrors.refConflict]
    },
    schema: {
      operationId: 'deleteGitTag',
      tags,
      summary: 'Delete a tag named in ?name=',
      params: RepoParams,
      querystring: RefNameQuery,
      response: GitResponses.deleted
    }
  }, async (request) => {
    await refs.deleteTag(request.scope.repository, writeLevelOf(request), request.query.name)
    return deleted(request.query.name)
  })
}

export default refRoutes
