import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import {
  CreateMergeRequestBody, ListMergeRequestsQuery, MergeBody, MergeCheckQuery, MergeRequestResponses, MrParams, UpdateMergeRequestBody
} from '../../schemas/git-merge-requests.js'
import { RepoParams } from '../../schemas/git.js'
import { platformCaller } from '../../plugins/auth.js'
import { repoOfRequest } from '../../plugins/git.js'
import type { MergeCaller } from '../../services/git/merges.js'
import { createdAt } from '../location.js'

/** Merge requests of a repository: `git.read` to see and check them, `git.write` to open, change, close and merge them. */
const mergeRequestRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { mergeRequests, merging } = app.gitMergeRequests
  const tags = ['git']
  const repoOf = (request: FastifyRequest) => repoOfRequest(request).repo
  const caller = (request: FastifyRequest): MergeCaller => {
    const { permissions } = repoOfRequest(request)
    return { userId: platformCaller(request).userId, level: permissions.has('git.admin') ? 'admin' : permissions.has('git.write') ? 'write' : null }
  }
  const read = app.requireRepoPermission('git.read')
  const write = app.requireRepoPermission('git.write')
  const one = async (mr: Parameters<typeof mergeRequests.view>[0]) => ({ success: true as const, data: await mergeRequests.view(mr) })

  app.get('/merge-requests', {
    config: { auth: 'platform' },
    preHandler: read,
    schema: { operationId: 'listGitMergeRequests', tags, summary: 'Merge requests, newest first, filtered by state, author, branches and draft', description: 'Needs `git.read`. `state` defaults to `open` (`all` for every state). Pages follow `nextCursor`.', params: RepoParams, querystring: ListMergeRequestsQuery, response: MergeRequestResponses.list }
  }, async (request) => {
    const page = await mergeRequests.list(repoOf(request), request.query)
    return { success: true as const, data: { items: await mergeRequests.views(page.items), nextCursor: page.nextCursor } }
  })

  app.post('/merge-requests', {
    config: { auth: 'platform' },
    preHandler: write,
    schema: { operationId: 'createGitMergeRequest', tags, summary: 'Propose merging a source branch into a target branch', description: 'Needs `git.write`. The target defaults to the default branch. Both branches must exist (400 `APP_GIT_BRANCH_NOT_FOUND`), differ (400 `APP_GIT_MR_SAME_BRANCH`), share history (400 `APP_GIT_MR_UNRELATED`) and the source must add something (400 `APP_GIT_MR_NOTHING_TO_MERGE`); one open merge request per pair of branches (409 `APP_GIT_MR_EXISTS`). Numbers (`iid`) count from 1 per repository.', params: RepoParams, body: CreateMergeRequestBody, response: MergeRequestResponses.created }
  }, async (request, reply) => {
    const mr = await mergeRequests.create(repoOf(request), platformCaller(request).userId, request.body)
    return reply.code(201).header('location', createdAt(request, String(mr.iid))).send(await one(mr))
  })

  app.get('/merge-requests/:iid', {
    config: { auth: 'platform' },
    preHandler: read,
    schema: { operationId: 'getGitMergeRequest', tags, summary: 'One merge request, with the branch heads as they are now', description: 'Needs `git.read`. Reading records a moved source or target head (and marks earlier reviews stale) if no push did yet.', params: MrParams, response: MergeRequestResponses.one }
  }, async (request) => one(await mergeRequests.get(repoOf(request), request.params.iid)))

  app.patch('/merge-requests/:iid', {
    config: { auth: 'platform' },
    preHandler: write,
    schema: { operationId: 'updateGitMergeRequest', tags, summary: 'Change the title, description, draft flag or target branch', description: 'Needs `git.write`. A new target must exist and share history with the source; the target of a closed or merged merge request stays (409 `APP_GIT_MR_NOT_OPEN`).', params: MrParams, body: UpdateMergeRequestBody, response: MergeRequestResponses.one }
  }, async (request) => one(await mergeRequests.update(repoOf(request), request.params.iid, request.body)))

  app.post('/merge-requests/:iid/close', {
    config: { auth: 'platform' },
    preHandler: write,
    schema: { operationId: 'closeGitMergeRequest', tags, summary: 'Close without merging', description: 'Needs `git.write`. Only an open merge request (409 `APP_GIT_MR_NOT_OPEN`).', params: MrParams, response: MergeRequestResponses.one }
  }, async (request) => one(await mergeRequests.close(repoOf(request), request.params.iid, platformCaller(request).userId)))

  app.post('/merge-requests/:iid/reopen', {
    config: { auth: 'platform' },
    preHandler: write,
    schema: { operationId: 'reopenGitMergeRequest', tags, summary: 'Reopen a closed merge request', description: 'Needs `git.write`. Only a closed one whose source branch still exists (409 `APP_GIT_MR_NOT_CLOSED`, `APP_GIT_MR_SOURCE_MISSING`), and not while another is open for the same branches (409 `APP_GIT_MR_EXISTS`).', params: MrParams, response: MergeRequestResponses.one }
  }, async (request) => one(await mergeRequests.reopen(repoOf(request), request.params.iid)))

  app.get('/merge-requests/:iid/merge-check', {
    config: { auth: 'platform' },
    preHandler: read,
    schema: { operationId: 'checkGitMergeRequest', tags, summary: 'Whether the caller may merge now, with every blocker at once', description: 'Needs `git.read`. Computed on the branches as they are: state, the caller\'s permission and branch protection, draft, missing branches, a source head other than `expectedHeadSha`, conflicting files (named), required approvals and requested changes.', params: MrParams, querystring: MergeCheckQuery, response: MergeRequestResponses.check }
  }, async (request) => ({ success: true as const, data: await merging.check(repoOf(request), request.params.iid, caller(request), request.query.expectedHeadSha) }))

  app.post('/merge-requests/:iid/merge', {
    config: { auth: 'platform' },
    preHandler: write,
    schema: { operationId: 'mergeGitMergeRequest', tags, summary: 'Merge by merge commit, squash, fast-forward or rebase', description: 'Needs `git.write` and whatever the target\'s protected-branch rule asks. Refused with the first blocker of the merge check (its message lists them all): 409 `APP_GIT_MR_NOT_OPEN`, `APP_GIT_MR_DRAFT`, `APP_GIT_MR_HEAD_CHANGED`, `APP_GIT_MR_CONFLICTS`, `APP_GIT_MR_APPROVALS_REQUIRED`, `APP_GIT_MR_CHANGES_REQUESTED`, `APP_GIT_MR_SOURCE_MISSING`, `APP_GIT_MR_TARGET_MISSING`; 403 `APP_GIT_BRANCH_PROTECTED`. `fast-forward` when the target moved on is 409 `APP_GIT_MR_NOT_FAST_FORWARD`; `rebase` of merge commits 409 `APP_GIT_MR_REBASE_UNSUPPORTED`. The target moves by compare-and-swap: a push that lands first makes it 409 `APP_GIT_MR_TARGET_MOVED` and nothing is overwritten.', params: MrParams, body: MergeBody, response: MergeRequestResponses.merged }
  }, async (request) => ({ success: true as const, data: await merging.merge(repoOf(request), request.params.iid, caller(request), request.body) }))

  app.get('/merge-requests/:iid/diff', {
    config: { auth: 'platform' },
    preHandler: read,
    schema: { operationId: 'getGitMergeRequestDiff', tags, summary: 'What the source changes against the merge base, per file', description: 'Needs `git.read`. The same shape as a commit\'s diff, `base` being the merge base.', params: MrParams, response: MergeRequestResponses.diff }
  }, async (request) => {
    const repo = repoOf(request)
    const mr = await mergeRequests.get(repo, request.params.iid)
    return { success: true as const, data: await merging.diff(repo, mr) }
  })

  app.get('/merge-requests/:iid/commits', {
    config: { auth: 'platform' },
    preHandler: read,
    schema: { operationId: 'listGitMergeRequestCommits', tags, summary: 'The source\'s commits since the merge base, oldest first', description: 'Needs `git.read`.', params: MrParams, response: MergeRequestResponses.commits }
  }, async (request) => {
    const repo = repoOf(request)
    const mr = await mergeRequests.get(repo, request.params.iid)
    return { success: true as const, data: await merging.commits(repo, mr) }
  })
}

export default mergeRequestRoutes
