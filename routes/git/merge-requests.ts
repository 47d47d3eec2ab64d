import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import {
  CreateMergeRequestBody, ListMergeRequestsQuery, MergeBody, MergeCheckQuery, MergeRequestResponses, MrParams, UpdateMergeRequestBody
} from '../../schemas/git-merge-requests.js'
import { RepoParams } from '../../schemas/git.js'
import { commonErrors } from '../../services/platform/errors.js'
import { gitErrors } from '../../services/git/errors.js'
import { created, ok } from '../replies.js'
import { actorOf } from './actor.js'

/** What the branches and fields of a merge request may meet, on opening one or changing it. */
const MR_FIELDS = [
  gitErrors.mrTitleRequired, gitErrors.branchUnknown, gitErrors.mrSameBranch, gitErrors.mrUnrelated, gitErrors.mrNotAReader,
  gitErrors.labelUnknown
]

/** What merging may meet: every blocker of the merge check, then the merge itself. */
const MERGE_REFUSALS = [
  gitErrors.defaultBranch, gitErrors.branchProtected, gitErrors.mrNotOpen, gitErrors.mrDraft, gitErrors.mrHeadChanged,
  gitErrors.mrConflicts, gitErrors.mrApprovalsRequired, gitErrors.mrChangesRequested, gitErrors.mrSourceMissing,
  gitErrors.mrTargetMissing, gitErrors.mrNotFastForward, gitErrors.mrRebaseUnsupported, gitErrors.mrTargetMoved
]

/**
 * Merge requests of a repository: `git.read` to see and check them,
 * `git.write` to open, change, close and merge them.
 */
const mergeRequestRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { mergeRequests, merging } = app.gitMergeRequests
  const tags = ['git']
  app.routeDefaults({ permission: 'git.write' })

  app.get('/merge-requests', {
    config: { permission: 'git.read', errors: [commonErrors.invalidCursor] },
    schema: {
      operationId: 'listGitMergeRequests',
      tags,
      summary: 'Merge requests, newest first, filtered by state, author, branches and draft',
      description: '`state` defaults to `open` (`all` for every state). Pages follow `nextCursor`.',
      params: RepoParams,
      querystring: ListMergeRequestsQuery,
      response: MergeRequestResponses.list
    }
  }, async (request) => {
    const page = await mergeRequests.list(request.scope.repository, request.query)
    return ok({ items: await mergeRequests.views(page.items), nextCursor: page.nextCursor })
  })

  app.post('/merge-requests', {
    config: { errors: [...MR_FIELDS, gitErrors.mrNothingToMerge, gitErrors.mrExists] },
    schema: {
      operationId: 'createGitMergeRequest',
      tags,
      summary: 'Propose merging a source branch into a target branch',
      description: 'The target defaults to the default branch. ' +
        'Both branches must exist, differ, share history, and the source must add something; ' +
        'one open merge request per pair of branches. Numbers (`iid`) count from 1 per repository.',
      params: RepoParams,
      body: CreateMergeRequestBody,
      response: MergeRequestResponses.created
    }
  }, async (request, reply) => {
    const mr = await mergeRequests.create(request.scope.repository, request.caller.user.userId, request.body)
    return created(reply, await mergeRequests.view(mr), { id: String(mr.iid) })
  })

  const oneMergeRequestRoutes: FastifyPluginAsyncTypebox = async (one) => {
    one.routeDefaults({ parent: 'mergeRequest' })

    one.get('', {
      config: { permission: 'git.read' },
      schema: {
        operationId: 'getGitMergeRequest',
        tags,
        summary: 'One merge request, with the branch heads as they are now',
        description: 'Reading records a moved source or target head (and marks earlier reviews stale) if no push did yet.',
        params: MrParams,
        response: MergeRequestResponses.one
      }
    }, async (request) => ok(await mergeRequests.view(request.scope.mergeRequest)))

    one.patch('', {
      config: { errors: [...MR_FIELDS, gitErrors.mrNotOpen, gitErrors.mrStateChanged] },
      schema: {
        operationId: 'updateGitMergeRequest',
        tags,
        summary: 'Change the title, description, draft flag or target branch',
        description: 'A new target must exist and share history with the source; the target of a closed or merged merge request stays.',
        params: MrParams,
        body: UpdateMergeRequestBody,
        response: MergeRequestResponses.one
      }
    }, async (request) => {
      const { repository, mergeRequest } = request.scope
      return ok(await mergeRequests.view(await mergeRequests.update(repository, mergeRequest, request.body)))
    })

    one.post('/close', {
      config: { errors: [gitErrors.mrNotOpen, gitErrors.mrStateChanged] },
      schema: {
        operationId: 'closeGitMergeRequest',
        tags,
        summary: 'Close without merging',
        description: 'Only an open merge request.',
        params: MrParams,
        response: MergeRequestResponses.one
      }
    }, async (request) => ok(await mergeRequests.view(await mergeRequests.close(request.scope.mergeRequest, request.caller.user.userId))))

    one.post('/reopen', {
      config: { errors: [gitErrors.mrNotClosed, gitErrors.mrSourceMissing, gitErrors.mrExists, gitErrors.mrStateChanged] },
      schema: {
        operationId: 'reopenGitMergeRequest',
        tags,
        summary: 'Reopen a closed merge request',
        description: 'Only a closed one whose source branch still exists, and not while another is open for the same branches.',
        params: MrParams,
        response: MergeRequestResponses.one
      }
    }, async (request) => ok(await mergeRequests.view(await mergeRequests.reopen(request.scope.repository, request.scope.mergeRequest))))

    one.get('/merge-check', {
      config: { permission: 'git.read' },
      schema: {
        operationId: 'checkGitMergeRequest',
        tags,
        summary: 'Whether the caller may merge now, with every blocker at once',
        description: 'Computed on the branches as they are: ' +
          'state, the caller\'s permission and branch protection, draft, missing branches, ' +
          'a source head other than `expectedHeadSha`, conflicting files (named), required approvals and requested changes.',
        params: MrParams,
        querystring: MergeCheckQuery,
        response: MergeRequestResponses.check
      }
    }, async (request) => {
      const { repository, mergeRequest } = request.scope
      return ok(await merging.check(repository, mergeRequest, actorOf(request), request.query.expectedHeadSha))
    })

    one.post('/merge', {
      config: { errors: MERGE_REFUSALS },
      schema: {
        operationId: 'mergeGitMergeRequest',
        tags,
        summary: 'Merge by merge commit, squash, fast-forward or rebase',
        description: 'The target\'s protected-branch rule may ask for more. A refusal names the first blocker of the merge check, ' +
          'and its message lists them all. ' +
          'The target moves by compare-and-swap: a push that lands first refuses the merge and nothing is overwritten.',
        params: MrParams,
        body: MergeBody,
        response: MergeRequestResponses.merged
      }
    }, async (request) => ok(await merging.merge(request.scope.repository, request.scope.mergeRequest, actorOf(request), request.body)))

    one.get('/diff', {
      config: { permission: 'git.read', errors: [gitErrors.outputTooLarge] },
      schema: {
        operationId: 'getGitMergeRequestDiff',
        tags,
        summary: 'What the source changes against the merge base, per file',
        description: 'The same shape as a commit\'s diff, `base` being the merge base.',
        params: MrParams,
        response: MergeRequestResponses.diff
      }
    }, async (request) => ok(await merging.diff(request.scope.repository, request.scope.mergeRequest)))

    one.get('/commits', {
      config: { permission: 'git.read' },
      schema: {
        operationId: 'listGitMergeRequestCommits',
        tags,
        summary: 'The source\'s commits since the merge base, oldest first',
        params: MrParams,
        response: MergeRequestResponses.commits
      }
    }, async (request) => ok(await merging.commits(request.scope.repository, request.scope.mergeRequest)))
  }
  await app.register(oneMergeRequestRoutes, { prefix: '/merge-requests/:iid' })
}

export default mergeRequestRoutes
