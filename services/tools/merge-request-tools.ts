import { Type } from '@sinclair/typebox'
import {
  Comment, CreateCommentBody, CreateMergeRequestBody, ListMergeRequestsQuery, MergeRequest, MrParams, mergeRequestSchemas
} from '../../schemas/git-merge-requests.js'
import { inlineRefs } from './inline-refs.js'
import { inRepositories, repositoryFor } from './infrastructure-tools.js'
import type { ToolDefinition } from './registry.js'
import type { ProjectToolContext } from './project-tool-context.js'

type ProjectTool = ToolDefinition<any, any, ProjectToolContext>

const { repoSlug, iid } = MrParams.properties
const inline = <T extends Parameters<typeof inlineRefs>[0]>(schema: T): T => inlineRefs(schema, mergeRequestSchemas)
const reads = { permission: 'git.read', heldBelow: inRepositories('git.read') } as const

/** A merge request as its routes reach it: the repository under the route's permission, then the number. */
async function mergeRequestFor (c: ProjectToolContext, slug: string, number: number, permission: 'git.read' | 'git.write' = 'git.read') {
  const repo = await repositoryFor(c, slug, permission)
  return { repo, mr: await c.services.gitMergeRequests.mergeRequests.get(repo, number) }
}

/**
 * Merge requests as tools: list, read, read the comments, open one, comment.
 * Opening and commenting change the team's review, attributed to the caller
 * and undone by closing or editing: writes, not approvals. Merging changes
 * a branch and is not offered.
 */
export const MERGE_REQUEST_TOOLS: ProjectTool[] = [
  {
    name: 'git_merge_requests_list',
    title: 'List merge requests',
    description: 'A repository\'s merge requests, newest first: `query.state` (`open` unless given; `all` for every state), author, ' +
      'branches, draft; pass the answer\'s `nextCursor` as `query.cursor` for the next page.',
    ...reads,
    risk: 'read',
    input: Type.Object({ repoSlug, query: Type.Optional(ListMergeRequestsQuery) }, { additionalProperties: false }),
    output: inline(Type.Object({ items: Type.Array(Type.Ref(MergeRequest)), nextCursor: Type.Union([Type.String(), Type.Null()]) })),
    run: async (c, input) => {
      const { mergeRequests } = c.services.gitMergeRequests
      const page = await mergeRequests.list(await repositoryFor(c, input.repoSlug), input.query ?? {})
      return { items: await mergeRequests.views(page.items), nextCursor: page.nextCursor }
    }
  },
  {
    name: 'git_merge_request_get',
    title: 'Read a merge request',
    description: 'One merge request by its number (`iid`): title, description, branches with their heads now, state, reviews.',
    ...reads,
    risk: 'read',
    input: Type.Object({ repoSlug, iid }, { additionalProperties: false }),
    output: inline(MergeRequest),
    run: async (c, input) => await c.services.gitMergeRequests.mergeRequests.view((await mergeRequestFor(c, input.repoSlug, input.iid)).mr)
  },
  {
    name: 'git_merge_request_comments_list',
    title: 'Read a merge request\'s comments',
    description: 'The comments of a merge request, oldest first; replies name their thread, inline ones their file and lines.',
    ...reads,
    risk: 'read',
    input: Type.Object({ repoSlug, iid }, { additionalProperties: false }),
    output: inline(Type.Object({ items: Type.Array(Type.Ref(Comment)) })),
    run: async (c, input) => {
      const { repo, mr } = await mergeRequestFor(c, input.repoSlug, input.iid)
      return { items: await c.services.gitMergeRequests.comments.list(repo, mr) }
    }
  },
  {
    name: 'git_merge_request_create',
    title: 'Open a merge request',
    description: 'Proposes merging `mergeRequest.sourceBranch` into `targetBranch` (the default branch unless given). Both must ' +
      'exist, differ, share history, and the source must add something; one open merge request per pair of branches.',
    permission: 'git.write',
    heldBelow: inRepositories('git.write'),
    risk: 'write',
    input: Type.Object({ repoSlug, mergeRequest: CreateMergeRequestBody }, { additionalProperties: false }),
    output: inline(MergeRequest),
    run: async (c, input) => {
      const { mergeRequests } = c.services.gitMergeRequests
      const repo = await repositoryFor(c, input.repoSlug, 'git.write')
      return await mergeRequests.view(await mergeRequests.create(repo, c.caller.userId, input.mergeRequest))
    }
  },
  {
    name: 'git_merge_request_comment',
    title: 'Comment on a merge request',
    description: 'A comment on a merge request: general, inline at lines of a file (`comment.position`), or a reply (`comment.replyTo`).',
    ...reads,
    risk: 'write',
    input: Type.Object({ repoSlug, iid, comment: CreateCommentBody }, { additionalProperties: false }),
    output: inline(Comment),
    run: async (c, input) => {
      const { repo, mr } = await mergeRequestFor(c, input.repoSlug, input.iid)
      return await c.services.gitMergeRequests.comments.create(repo, mr, c.caller.userId, input.comment)
    }
  }
]
