import { Type, type Static } from '@sinclair/typebox'
import { Envelope, LOCATION, withHeaders } from './envelope.js'
import { DateTime, Deleted, Id } from './common.js'
import { Commit, CommitDiff } from './git.js'

/** Limits of merge requests, used by both the schemas and the services. */
export const MR_LIMITS = {
  pageDefault: 20,
  pageMax: 100,
  titleMax: 255,
  descriptionMax: 65_536,
  commitMessageMax: 65_536,
  /** The commits list and a rebase stop here: past it, merge or squash instead. */
  commitsMax: 250,
  requiredApprovalsMax: 20,
  /** Assignees, reviewers and labels of one merge request, each. */
  peopleMax: 20,
  labelsMax: 20,
  commentsPerMr: 2000,
  commentMax: 65_536,
  suggestionsPerCommit: 50
} as const

export const REACTIONS = ['+1', '-1', 'laugh', 'hooray', 'confused', 'heart', 'rocket', 'eyes'] as const

const RepoSlug = Type.String({ minLength: 1, maxLength: 100, pattern: '^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$' })
const Iid = Type.Integer({ minimum: 1, maximum: 2_147_483_647, description: 'The merge request\'s number in its repository (`!iid`)' })
const Sha = Type.String({ pattern: '^[0-9a-f]{40}$' })
const BranchName = Type.String({ minLength: 1, maxLength: 255, description: 'A branch name (slashes allowed)' })
const NullableDate = Type.Union([DateTime, Type.Null()])

const UserIds = (what: string) => Type.Array(Id, { maxItems: MR_LIMITS.peopleMax, description: `${what}: platform user ids of people who can read the repository` })
const Labels = Type.Array(Type.String({ minLength: 1, maxLength: 50, pattern: '^[^\\x00-\\x1f,]+$' }), { maxItems: MR_LIMITS.labelsMax, description: 'Names of labels of the repository, letter case aside (any other is refused, named in `details.fields`)' })
const MrState = Type.Union([Type.Literal('open'), Type.Literal('closed'), Type.Literal('merged')])
const MergeMethod = Type.Union([Type.Literal('merge'), Type.Literal('squash'), Type.Literal('fast-forward'), Type.Literal('rebase')], {
  description: '`merge`: a merge commit with two parents; `squash`: one new commit with the combined change; `fast-forward`: the target moves to the source head (only when the target has not moved on); `rebase`: the source commits replayed onto the target, authors kept, then a fast-forward'
})

export const MergeRequest = Type.Object({
  id: Type.String(),
  iid: Type.Integer({ description: 'Numbered per repository from 1' }),
  title: Type.String(),
  description: Type.String(),
  draft: Type.Boolean({ description: 'A draft cannot be merged until it is marked ready' }),
  state: MrState,
  sourceBranch: Type.String(),
  targetBranch: Type.String(),
  headSha: Type.String({ description: 'The source branch head when last seen (creation, a push, or a read)' }),
  targetSha: Type.String({ description: 'The target branch head when last seen' }),
  mergeBaseSha: Type.String({ description: 'The best common ancestor of the two; the diff and the commits list start here' }),
  sourceBranchExists: Type.Boolean(),
  authorId: Type.String(),
  assignees: Type.Array(Type.String()),
  reviewers: Type.Array(Type.String(), { description: 'People asked to review' }),
  labels: Type.Array(Type.String()),
  createdAt: DateTime,
  updatedAt: DateTime,
  closedAt: NullableDate,
  closedBy: Type.Union([Type.String(), Type.Null()]),
  mergedAt: NullableDate,
  mergedBy: Type.Union([Type.String(), Type.Null()], { description: 'Null when the merge arrived by a push rather than through the API' }),
  mergeMethod: Type.Union([MergeMethod, Type.Null()]),
  mergeCommitSha: Type.Union([Type.String(), Type.Null()], { description: 'What the target branch pointed at after the merge' })
}, { $id: 'GitMergeRequest' })

const BlockerCode = Type.Union(['not_open', 'draft', 'source_missing', 'target_missing', 'stale_head', 'conflicts', 'approvals', 'changes_requested', 'branch_protected', 'permission'].map((code) => Type.Literal(code)))

export const MergeCheck = Type.Object({
  mergeable: Type.Boolean({ description: 'No blocker: the caller may merge now' }),
  headSha: Type.String({ description: 'The source head the check ran on; pass it as `expectedHeadSha` to merge exactly this' }),
  targetSha: Type.String(),
  mergeBaseSha: Type.String(),
  fastForward: Type.Boolean({ description: 'The target is an ancestor of the source: `fast-forward` is possible' }),
  conflicts: Type.Array(Type.String(), { description: 'Files that conflict when the source is merged into the target' }),
  approvals: Type.Object({ required: Type.Integer(), given: Type.Integer() }),
  blockers: Type.Array(Type.Object({
    code: BlockerCode,
    message: Type.String()
  }), { description: 'Everything that stands in the way, all at once' })
}, { $id: 'GitMergeCheck' })

const ReviewState = Type.Union([Type.Literal('approved'), Type.Literal('changes_requested'), Type.Literal('commented')])

export const Review = Type.Object({
  id: Type.String(),
  authorId: Type.String(),
  state: ReviewState,
  body: Type.String(),
  commitSha: Type.String({ description: 'The source head the review was given on' }),
  stale: Type.Boolean({ description: 'The source moved after the review: it no longer counts' }),
  dismissed: Type.Boolean(),
  dismissedBy: Type.Union([Type.String(), Type.Null()]),
  createdAt: DateTime
}, { $id: 'GitReview' })

const Position = Type.Object({
  path: Type.String({ minLength: 1, maxLength: 4096, description: 'A file, relative to the repository root' }),
  side: Type.Union([Type.Literal('old'), Type.Literal('new')], { description: '`new`: the file in a commit of the source; `old`: the file at the merge base' }),
  line: Type.Integer({ minimum: 1, maximum: 10_000_000, description: 'The (last) line commented on, counted from 1' }),
  startLine: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000_000, description: 'The first line of a range' })),
  commitSha: Type.String({ pattern: '^[0-9a-f]{40}$', description: 'The commit whose file the lines are of: on the new side a commit of the source, on the old side the merge base' })
}, { additionalProperties: false })

export const Comment = Type.Object({
  id: Type.String(),
  authorId: Type.String(),
  body: Type.String(),
  replyTo: Type.Union([Type.String(), Type.Null()], { description: 'The first comment of the thread this one answers; null for a first comment' }),
  position: Type.Union([Position, Type.Null()], { description: 'Where an inline comment points; null for a general one' }),
  outdated: Type.Boolean({ description: 'A push changed the file since: the lines may no longer be what is merged' }),
  resolved: Type.Boolean({ description: 'Whether the thread this comment starts is resolved' }),
  resolvedBy: Type.Union([Type.String(), Type.Null()]),
  appliedIn: Type.Union([Type.String(), Type.Null()], { description: 'The commit that applied this comment\'s suggestion' }),
  createdAt: DateTime,
  updatedAt: DateTime
}, { $id: 'GitComment' })

export const Reaction = Type.Object({
  emoji: Type.String(),
  count: Type.Integer(),
  userIds: Type.Array(Type.String())
}, { $id: 'GitReaction' })

const MergeRequestPage = Type.Object({
  items: Type.Array(Type.Ref(MergeRequest)),
  nextCursor: Type.Union([Type.String(), Type.Null()], { description: 'Pass as `cursor` for the next page; null on the last page' })
})

export const MergeResult = Type.Object({
  mergeRequest: Type.Ref(MergeRequest),
  method: MergeMethod,
  commitSha: Type.String({ description: 'The target branch\'s new head' }),
  sourceBranchDeleted: Type.Boolean({ description: 'False also when the source moved meanwhile and was kept' })
}, { $id: 'GitMergeResult' })

export const MrParams = Type.Object({ projectId: Id, repoSlug: RepoSlug, iid: Iid })
export const CommentParams = Type.Object({ projectId: Id, repoSlug: RepoSlug, iid: Iid, commentId: Id })
export const ReviewParams = Type.Object({ projectId: Id, repoSlug: RepoSlug, iid: Iid, reviewId: Id })

export const ListMergeRequestsQuery = Type.Object({
  state: Type.Optional(Type.Union([MrState, Type.Literal('all')], { default: 'open' })),
  author: Type.Optional(Id),
  target: Type.Optional(BranchName),
  source: Type.Optional(BranchName),
  draft: Type.Optional(Type.Boolean()),
  assignee: Type.Optional(Id),
  reviewer: Type.Optional(Id),
  label: Type.Optional(Type.String({ minLength: 1, maxLength: 50 })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MR_LIMITS.pageMax, default: MR_LIMITS.pageDefault })),
  cursor: Type.Optional(Type.String({ pattern: '^[0-9]{1,10}$', description: 'nextCursor of the previous page' }))
}, { additionalProperties: false })

export const CreateMergeRequestBody = Type.Object({
  sourceBranch: BranchName,
  targetBranch: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'The repository\'s default branch when omitted' })),
  title: Type.String({ minLength: 1, maxLength: MR_LIMITS.titleMax }),
  description: Type.Optional(Type.String({ maxLength: MR_LIMITS.descriptionMax })),
  draft: Type.Optional(Type.Boolean({ default: false })),
  assignees: Type.Optional(UserIds('Who works on it')),
  reviewers: Type.Optional(UserIds('Who is asked to review')),
  labels: Type.Optional(Labels)
}, { additionalProperties: false })

export const UpdateMergeRequestBody = Type.Object({
  title: Type.Optional(Type.String({ minLength: 1, maxLength: MR_LIMITS.titleMax })),
  description: Type.Optional(Type.String({ maxLength: MR_LIMITS.descriptionMax })),
  draft: Type.Optional(Type.Boolean()),
  targetBranch: Type.Optional(BranchName),
  assignees: Type.Optional(UserIds('Replaces the assignees')),
  reviewers: Type.Optional(UserIds('Replaces the reviewers')),
  labels: Type.Optional(Labels)
}, { additionalProperties: false, minProperties: 1 })

export const MergeCheckQuery = Type.Object({
  expectedHeadSha: Type.Optional(Sha)
}, { additionalProperties: false })

export const MergeBody = Type.Object({
  method: Type.Optional(MergeMethod),
  expectedHeadSha: Type.Optional(Type.String({ pattern: '^[0-9a-f]{40}$', description: 'Merge only if the source head is still this commit (refused otherwise)' })),
  deleteSourceBranch: Type.Optional(Type.Boolean({ default: false })),
  commitMessage: Type.Optional(Type.String({ minLength: 1, maxLength: MR_LIMITS.commitMessageMax, description: 'The merge or squash commit\'s message; a default naming the merge request otherwise' }))
}, { additionalProperties: false })

export const ReviewBody = Type.Object({
  state: ReviewState,
  body: Type.Optional(Type.String({ maxLength: MR_LIMITS.descriptionMax }))
}, { additionalProperties: false })

export const CreateCommentBody = Type.Object({
  body: Type.String({ minLength: 1, maxLength: MR_LIMITS.commentMax }),
  position: Type.Optional(Position),
  replyTo: Type.Optional(Type.String({ minLength: 1, maxLength: 64, pattern: '^[0-9A-Za-z_-]+$', description: 'A comment of this merge request: the reply joins its thread' }))
}, { additionalProperties: false })

export const EditCommentBody = Type.Object({
  body: Type.String({ minLength: 1, maxLength: MR_LIMITS.commentMax })
}, { additionalProperties: false })

export const ReactionBody = Type.Object({
  emoji: Type.Union(REACTIONS.map((emoji) => Type.Literal(emoji)))
}, { additionalProperties: false })

export const ApplySuggestionsBody = Type.Object({
  commentIds: Type.Array(Type.String({ minLength: 1, maxLength: 64, pattern: '^[0-9A-Za-z_-]+$' }), { minItems: 1, maxItems: MR_LIMITS.suggestionsPerCommit, uniqueItems: true, description: 'Inline comments holding a suggestion block, applied together as one commit' }),
  message: Type.Optional(Type.String({ minLength: 1, maxLength: MR_LIMITS.commitMessageMax }))
}, { additionalProperties: false })

const AppliedSuggestions = Type.Object({
  commitSha: Type.String({ description: 'The new head of the source branch' }),
  mergeRequest: Type.Ref(MergeRequest)
})

const MergeRequestCommits = Type.Object({
  items: Type.Array(Type.Ref(Commit), { description: 'Oldest first' }),
  truncated: Type.Boolean({ description: `More than ${MR_LIMITS.commitsMax} commits` })
})

export const MergeRequestResponses = {
  list: { 200: Envelope(MergeRequestPage) },
  created: { 201: withHeaders(Envelope(Type.Ref(MergeRequest)), LOCATION) },
  one: { 200: Envelope(Type.Ref(MergeRequest)) },
  check: { 200: Envelope(Type.Ref(MergeCheck)) },
  merged: { 200: Envelope(Type.Ref(MergeResult)) },
  diff: { 200: Envelope(Type.Ref(CommitDiff)) },
  commits: { 200: Envelope(MergeRequestCommits) },
  reviews: { 200: Envelope(Type.Array(Type.Ref(Review))) },
  reviewCreated: { 201: withHeaders(Envelope(Type.Ref(Review)), LOCATION) },
  review: { 200: Envelope(Type.Ref(Review)) },
  comments: { 200: Envelope(Type.Array(Type.Ref(Comment))) },
  commentCreated: { 201: withHeaders(Envelope(Type.Ref(Comment)), LOCATION) },
  comment: { 200: Envelope(Type.Ref(Comment)) },
  commentDeleted: { 200: Envelope(Deleted) },
  reactions: { 200: Envelope(Type.Array(Type.Ref(Reaction))) },
  suggestionsApplied: { 200: Envelope(AppliedSuggestions) }
}

export const mergeRequestSchemas = [MergeRequest, MergeCheck, Review, MergeResult, Comment, Reaction]

export type MergeRequestT = Static<typeof MergeRequest>
export type MergeCheckT = Static<typeof MergeCheck>
export type BlockerT = MergeCheckT['blockers'][number]
export type ReviewT = Static<typeof Review>
export type ReviewStateT = Static<typeof ReviewState>
export type MergeMethodT = Static<typeof MergeMethod>
export type MergeResultT = Static<typeof MergeResult>
export type ListMergeRequestsQueryT = Static<typeof ListMergeRequestsQuery>
export type CreateMergeRequestBodyT = Static<typeof CreateMergeRequestBody>
export type UpdateMergeRequestBodyT = Static<typeof UpdateMergeRequestBody>
export type MergeBodyT = Static<typeof MergeBody>
export type CommentT = Static<typeof Comment>
export type PositionT = Static<typeof Position>
export type CreateCommentBodyT = Static<typeof CreateCommentBody>
export type ReactionT = Static<typeof Reaction>
export type ApplySuggestionsBodyT = Static<typeof ApplySuggestionsBody>
export type ReactionEmojiT = Static<typeof ReactionBody>['emoji']
