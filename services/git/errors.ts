import { errorCatalogue, fieldIssue } from '../platform/errors.js'

/** A merge blocker's own sentence, followed, when it refuses a merge, by the other blockers' (so one refusal names them all). */
function withOthers (sentence: string, others: readonly string[] = []): string {
  return others.length === 0 ? sentence : `${sentence}; also: ${others.join('; ')}`
}

/** What a merge refusal carries besides its own parameters: the other blockers' sentences. */
interface Others { others?: readonly string[] }

const LIMIT = ({ limit }: { limit: number }) => ({ limit })
const TAG_VERBS = { create: 'create it', update: 'move it', delete: 'delete it' } as const

/**
 * Every code the git family answers with, once: repositories, refs, content,
 * settings, the transports and merge requests. Services throw
 * `gitErrors.name(params)`, routes list `gitErrors.name`.
 */
export const gitErrors = errorCatalogue('git', {
  // Repositories and the transports
  hostingDisabled: {
    code: 'APP_GIT_HOSTING_DISABLED',
    status: 404,
    message: 'Git hosting is not enabled on this server (GIT_HOSTING_ENABLED)',
    description: 'git hosting is off on this server (GIT_HOSTING_ENABLED)'
  },
  authRequired: {
    code: 'APP_GIT_AUTH_REQUIRED',
    status: 401,
    message: 'Sign in: give a personal access token, a platform JWT or a deploy key token as the password',
    description: 'git over HTTP without a credential where one is needed (with the Basic challenge)'
  },
  smartHttpOnly: {
    code: 'APP_GIT_SMART_HTTP_ONLY',
    status: 400,
    message: 'Only the smart protocol is served: ?service=git-upload-pack or git-receive-pack',
    description: 'a dumb-protocol request: only git-upload-pack and git-receive-pack are served'
  },
  readOnlyKey: { code: 'APP_GIT_READ_ONLY_KEY', status: 403, message: 'This deploy key is read-only', description: 'a read-only deploy key tried to push' },
  repositoryNotFound: { code: 'APP_GIT_REPOSITORY_NOT_FOUND', status: 404, message: 'Repository not found', description: 'no such repository in the project, or the caller may not see it' },
  invalidSlug: {
    code: 'APP_GIT_INVALID_SLUG',
    status: 400,
    message: 'A slug is letters, digits, ".", "_" or "-", starting with a letter or digit and not ending in ".git"',
    details: () => fieldIssue('body.slug', 'is not a repository slug'),
    description: 'the slug is not letters, digits, `.`, `_` and `-`, or ends in `.git`'
  },
  slugTaken: {
    code: 'APP_GIT_SLUG_TAKEN',
    status: 409,
    message: ({ slug }: { slug: string }) => `A repository "${slug}" already exists in this project`,
    description: 'another repository of the project has the slug'
  },
  failed: {
    code: 'APP_GIT_FAILED',
    status: 500,
    message: ({ command }: { command: string }) => `git ${command} failed`,
    description: 'git failed where it should not; what it said stays in the server log'
  },
  outputTooLarge: {
    code: 'APP_GIT_OUTPUT_TOO_LARGE',
    status: 413,
    message: ({ limit }: { limit: number }) => `The answer is larger than ${limit} bytes`,
    details: LIMIT,
    description: 'the answer would be larger than the server gives (a raw diff over 16 MB)'
  },

  // Names, revisions and paths
  invalidRefName: {
    code: 'APP_GIT_INVALID_REF_NAME',
    status: 400,
    message: ({ what, problem }: { what: 'branch' | 'tag', problem: string, path: string }) => `The ${what} name ${problem}`,
    details: ({ path, problem }) => fieldIssue(path, problem),
    description: 'a branch or tag name git would not take, or a reserved one'
  },
  invalidRef: {
    code: 'APP_GIT_INVALID_REF',
    status: 400,
    message: ({ value }: { value: string, path: string }) => `"${value.slice(0, 80)}" is not a branch, tag or commit id`,
    details: ({ path }) => fieldIssue(path, 'is not a branch, tag or commit id'),
    description: 'a revision that is no branch, tag or commit id'
  },
  invalidPath: {
    code: 'APP_GIT_INVALID_PATH',
    status: 400,
    message: (_: { path: string }) => 'The path must be relative, without empty, "." or ".." components',
    details: ({ path }) => fieldIssue(path, 'is not a path inside the repository'),
    description: 'a path that is not relative, or has empty, `.` or `..` components'
  },
  invalidBranchPattern: {
    code: 'APP_GIT_INVALID_BRANCH_PATTERN',
    status: 400,
    message: ({ problem }: { problem: string, path: string }) => `The branch pattern ${problem}`,
    details: ({ path, problem }) => fieldIssue(path, problem),
    description: 'a branch pattern that is no branch name with `*` in it'
  },
  invalidTagPattern: {
    code: 'APP_GIT_INVALID_TAG_PATTERN',
    status: 400,
    message: ({ problem }: { problem: string, path: string }) => `The tag pattern ${problem}`,
    details: ({ path, problem }) => fieldIssue(path, problem),
    description: 'a tag pattern that is no tag name with `*` in it'
  },
  notACommit: { code: 'APP_GIT_NOT_A_COMMIT', status: 400, message: ({ rev }: { rev: string }) => `"${rev.slice(0, 80)}" does not name a commit`, description: 'the revision names no commit' },
  notAFolder: { code: 'APP_GIT_NOT_A_FOLDER', status: 400, message: ({ path }: { path: string }) => `"${path.slice(0, 200)}" is a file, not a folder`, description: 'the path is a file, not a folder' },
  notAFile: {
    code: 'APP_GIT_NOT_A_FILE',
    status: 400,
    message: ({ path, is }: { path: string, is: 'folder' | 'submodule' }) => `"${path.slice(0, 200)}" is a ${is}, not a file`,
    description: 'the path is a folder or a submodule, not a file'
  },
  ambiguousRef: {
    code: 'APP_GIT_AMBIGUOUS_REF',
    status: 400,
    message: ({ short }: { short: string }) => `"${short}" matches several objects; give more digits`,
    description: 'an abbreviated commit id matches several objects'
  },
  branchUnknown: {
    code: 'APP_GIT_BRANCH_UNKNOWN',
    status: 400,
    message: ({ branch }: { branch: string, path: string }) => `No branch "${branch}" in this repository`,
    details: ({ path }) => fieldIssue(path, 'is not a branch of this repository'),
    description: 'a branch the body names does not exist'
  },
  refNotFound: {
    code: 'APP_GIT_REF_NOT_FOUND',
    status: 404,
    message: ({ rev }: { rev: string }) => `No branch, tag or commit "${rev.slice(0, 80)}" in this repository`,
    description: 'no such branch, tag or commit in the repository'
  },
  pathNotFound: { code: 'APP_GIT_PATH_NOT_FOUND', status: 404, message: ({ path }: { path: string }) => `No "${path.slice(0, 200)}" at this revision`, description: 'nothing at this path at the revision' },
  branchNotFound: { code: 'APP_GIT_BRANCH_NOT_FOUND', status: 404, message: ({ branch }: { branch: string }) => `No branch "${branch}"`, description: 'no such branch' },
  tagNotFound: { code: 'APP_GIT_TAG_NOT_FOUND', status: 404, message: ({ tag }: { tag: string }) => `No tag "${tag}"`, description: 'no such tag' },

  // Branches and tags, and the rules protecting them
  defaultBranch: {
    code: 'APP_GIT_DEFAULT_BRANCH',
    status: 400,
    message: ({ branch, merging }: { branch: string, merging?: boolean }) => merging === true
      ? `"${branch}" is the default branch and is kept`
      : `"${branch}" is the default branch; make another branch the default first`,
    description: 'the default branch cannot be deleted'
  },
  refConflict: {
    code: 'APP_GIT_REF_CONFLICT',
    status: 409,
    message: ({ ref, change }: { ref: string, change: 'create' | 'delete' }) => change === 'create' ? `"${ref}" already exists` : `"${ref}" changed meanwhile; try again`,
    description: 'the branch or tag exists already, or moved meanwhile (a push came first)'
  },
  branchProtected: {
    code: 'APP_GIT_BRANCH_PROTECTED',
    status: 403,
    message: ({ branch, pattern, why, others }: { branch: string, pattern?: string, why: string } & Others) =>
      withOthers(`Branch "${branch}" is protected${pattern === undefined ? '' : ` by "${pattern}"`}: ${why}`, others),
    description: 'a protected-branch rule keeps the caller from changing the branch'
  },
  tagProtected: {
    code: 'APP_GIT_TAG_PROTECTED',
    status: 403,
    message: ({ tag, pattern, who, change }: { tag: string, pattern: string, who: 'admin' | 'nobody', change: 'create' | 'update' | 'delete' }) =>
      `Tag "${tag}" is protected by "${pattern}": ${who === 'admin' ? 'only git.admin holders' : 'nobody'} may ${TAG_VERBS[change]}`,
    description: 'a protected-tag rule keeps the caller from creating, moving or deleting the tag'
  },
  ruleNotFound: {
    code: 'APP_GIT_RULE_NOT_FOUND',
    status: 404,
    message: ({ noun }: { noun: string }) => `${noun[0].toUpperCase()}${noun.slice(1)} rule not found`,
    description: 'no such rule in the repository'
  },
  ruleExists: {
    code: 'APP_GIT_RULE_EXISTS',
    status: 409,
    message: ({ noun, pattern }: { noun: string, pattern: string }) => `A ${noun} rule for "${pattern}" exists already`,
    description: 'a rule for the same pattern exists'
  },
  tooManyRules: {
    code: 'APP_GIT_TOO_MANY_RULES',
    status: 400,
    message: ({ noun, limit }: { noun: string, limit: number }) => `At most ${limit} ${noun} rules per repository`,
    details: LIMIT,
    description: 'the repository holds as many rules of the kind as it may (`details.limit`)'
  },

  // Deploy keys, labels and members
  deployKeyNotFound: { code: 'APP_GIT_DEPLOY_KEY_NOT_FOUND', status: 404, message: 'Deploy key not found', description: 'no such deploy key on the repository' },
  deployKeyExists: {
    code: 'APP_GIT_DEPLOY_KEY_EXISTS',
    status: 409,
    message: ({ fingerprint }: { fingerprint: string }) => `This key (${fingerprint}) is in use already, as a deploy key or a user's SSH key; generate one for this purpose`,
    description: 'the SSH key is a deploy key or a user\'s key already'
  },
  tooManyDeployKeys: {
    code: 'APP_GIT_TOO_MANY_DEPLOY_KEYS',
    status: 400,
    message: ({ limit }: { limit: number }) => `At most ${limit} deploy keys per repository`,
    details: LIMIT,
    description: 'the repository holds as many deploy keys as it may (`details.limit`)'
  },
  labelNotFound: { code: 'APP_GIT_LABEL_NOT_FOUND', status: 404, message: 'Label not found', description: 'no such label in the repository' },
  labelNameRequired: {
    code: 'APP_GIT_LABEL_NAME_REQUIRED',
    status: 400,
    message: (_: { path: string }) => 'A label needs a name',
    details: ({ path }) => fieldIssue(path, 'is blank'),
    description: 'the label\'s name is blank'
  },
  labelExists: {
    code: 'APP_GIT_LABEL_EXISTS',
    status: 409,
    message: ({ name }: { name: string }) => `A label "${name}" exists already in this repository (letter case aside)`,
    description: 'a label of that name exists, letter case aside'
  },
  tooManyLabels: {
    code: 'APP_GIT_TOO_MANY_LABELS',
    status: 400,
    message: ({ limit }: { limit: number }) => `At most ${limit} labels per repository`,
    details: LIMIT,
    description: 'the repository holds as many labels as it may (`details.limit`)'
  },
  labelUnknown: {
    code: 'APP_GIT_LABEL_UNKNOWN',
    status: 400,
    message: ({ unknown }: { unknown: string[], fields: Array<{ path: string, name: string }> }) =>
      `Not labels of this repository: ${unknown.map((name) => `"${name}"`).join(', ')}; create them first`,
    details: ({ fields }: { fields: Array<{ path: string, name: string }> }) => ({ fields: fields.map(({ path, name }) => ({ path, message: `"${name}" is not a label of this repository` })) }),
    description: 'the body names labels the repository does not have; `details.fields` names each'
  },
  memberNotFound: { code: 'APP_GIT_MEMBER_NOT_FOUND', status: 404, message: 'This user is not a member of the repository', description: 'the user is no member of the repository' },
  tooManyMembers: {
    code: 'APP_GIT_TOO_MANY_MEMBERS',
    status: 400,
    message: ({ limit }: { limit: number }) => `At most ${limit} members per repository`,
    details: LIMIT,
    description: 'the repository holds as many members as it may (`details.limit`)'
  },

  // Merge requests
  mrNotFound: { code: 'APP_GIT_MR_NOT_FOUND', status: 404, message: 'Merge request not found', description: 'no merge request of that number in the repository' },
  mrTitleRequired: {
    code: 'APP_GIT_MR_TITLE_REQUIRED',
    status: 400,
    message: 'A title is required',
    details: () => fieldIssue('body.title', 'is blank'),
    description: 'the title is blank'
  },
  mrSameBranch: {
    code: 'APP_GIT_MR_SAME_BRANCH',
    status: 400,
    message: 'The source and target branches are the same',
    details: () => fieldIssue('body.targetBranch', 'is the source branch'),
    description: 'the source and target branches are the same'
  },
  mrUnrelated: { code: 'APP_GIT_MR_UNRELATED', status: 400, message: 'The branches share no history', description: 'the branches share no history' },
  mrNothingToMerge: {
    code: 'APP_GIT_MR_NOTHING_TO_MERGE',
    status: 400,
    message: ({ source, target }: { source: string, target: string }) => `"${target}" already holds every commit of "${source}"`,
    description: 'the target holds every commit of the source already'
  },
  mrNotAReader: {
    code: 'APP_GIT_MR_NOT_A_READER',
    status: 400,
    message: (_: { ids: string[] }) => 'Assignees and reviewers must be able to read the repository (git.read)',
    details: ({ ids }) => ({ ids }),
    description: 'an assignee or reviewer cannot read the repository; `details.ids` names them'
  },
  mrExists: {
    code: 'APP_GIT_MR_EXISTS',
    status: 409,
    message: ({ iid, source, target }: { id: string, iid: number, source: string, target: string }) => `Merge request !${iid} is open already for "${source}" into "${target}"`,
    details: ({ id, iid }) => ({ ids: [id], actual: iid }),
    description: 'another merge request is open for the same branches'
  },
  mrStateChanged: {
    code: 'APP_GIT_MR_STATE_CHANGED',
    status: 409,
    message: 'The merge request changed meanwhile (closed, reopened or merged); read it again',
    description: 'the merge request was closed, reopened or merged meanwhile'
  },
  mrNotOpen: {
    code: 'APP_GIT_MR_NOT_OPEN',
    status: 409,
    message: (refusal?: { state: string } & Others) =>
      refusal === undefined ? 'The merge request is closed or merged' : withOthers(`The merge request is ${refusal.state}`, refusal.others),
    description: 'the merge request is closed or merged'
  },
  mrNotClosed: {
    code: 'APP_GIT_MR_NOT_CLOSED',
    status: 409,
    message: ({ merged }: { merged: boolean }) => merged ? 'A merged merge request cannot be reopened' : 'The merge request is open already',
    description: 'only a closed merge request can be reopened'
  },
  mrDraft: {
    code: 'APP_GIT_MR_DRAFT',
    status: 409,
    message: (refusal?: Others) => withOthers('The merge request is a draft: mark it ready first', refusal?.others),
    description: 'the merge request is a draft'
  },
  mrSourceMissing: {
    code: 'APP_GIT_MR_SOURCE_MISSING',
    status: 409,
    message: ({ branch, others }: { branch: string } & Others) => withOthers(`The source branch "${branch}" no longer exists`, others),
    description: 'the source branch no longer exists'
  },
  mrTargetMissing: {
    code: 'APP_GIT_MR_TARGET_MISSING',
    status: 409,
    message: ({ branch, others }: { branch: string } & Others) => withOthers(`The target branch "${branch}" no longer exists`, others),
    description: 'the target branch no longer exists'
  },
  mrHeadChanged: {
    code: 'APP_GIT_MR_HEAD_CHANGED',
    status: 409,
    message: (moved: ({ actual: string, expected: string } & Others) | { branch: string, expected: string }) => 'branch' in moved
      ? `"${moved.branch}" moved meanwhile (a push came first); read the merge request again`
      : withOthers(`The source head is ${moved.actual}, not ${moved.expected}: review the new commits first`, moved.others),
    details: (moved) => 'branch' in moved ? { expected: moved.expected } : { actual: moved.actual },
    description: 'the source branch is not at the head the caller expected (a push came first)'
  },
  mrConflicts: {
    code: 'APP_GIT_MR_CONFLICTS',
    status: 409,
    message: ({ files, others }: { files: string[] } & Others) =>
      withOthers(`The source and target conflict in ${files.slice(0, 20).join(', ')}${files.length > 20 ? ` and ${files.length - 20} more` : ''}`, others),
    details: ({ files }) => ({ ids: files.slice(0, 100) }),
    description: 'the source and target conflict; `details.ids` names the files'
  },
  mrApprovalsRequired: {
    code: 'APP_GIT_MR_APPROVALS_REQUIRED',
    status: 409,
    message: ({ required, given, others }: { required: number, given: number } & Others) =>
      withOthers(`${required} approval${required === 1 ? '' : 's'} required, ${given} given`, others),
    description: 'the target\'s protected-branch rule asks for more approvals'
  },
  mrChangesRequested: {
    code: 'APP_GIT_MR_CHANGES_REQUESTED',
    status: 409,
    message: ({ count, others }: { count: number } & Others) => withOthers(`Changes requested by ${count} reviewer${count === 1 ? '' : 's'}`, others),
    description: 'a reviewer asks for changes'
  },
  mrNotFastForward: {
    code: 'APP_GIT_MR_NOT_FAST_FORWARD',
    status: 409,
    message: 'The target has commits the source lacks: merge, squash or rebase instead',
    description: '`fast-forward` while the target has moved on'
  },
  mrRebaseUnsupported: {
    code: 'APP_GIT_MR_REBASE_UNSUPPORTED',
    status: 409,
    message: (why: { mergeCommits: true } | { limit: number }) => 'limit' in why
      ? `A rebase replays at most ${why.limit} commits: merge or squash instead`
      : 'The source holds merge commits, which a rebase would flatten: merge or squash instead',
    description: '`rebase` of a source holding merge commits, or of too many commits'
  },
  mrTargetMoved: {
    code: 'APP_GIT_MR_TARGET_MOVED',
    status: 409,
    message: ({ branch }: { branch: string, expected: string }) => `"${branch}" moved while merging (a push came first); check again and retry`,
    details: ({ expected }) => ({ expected }),
    description: 'the target moved while merging (a push came first); nothing was overwritten'
  },

  // Reviews, comments, reactions and suggestions
  mrSelfReview: {
    code: 'APP_GIT_MR_SELF_REVIEW',
    status: 403,
    message: 'The author of a merge request cannot approve it or request changes on it',
    description: 'the author may comment on their own merge request, not judge it'
  },
  reviewBodyRequired: {
    code: 'APP_GIT_REVIEW_BODY_REQUIRED',
    status: 400,
    message: 'Say what to change, or what the comment is',
    description: 'requesting changes or commenting needs a body'
  },
  reviewNotFound: {
    code: 'APP_GIT_REVIEW_NOT_FOUND',
    status: 404,
    message: 'No approval or change request with this id on this merge request',
    description: 'no such approval or change request (comments cannot be dismissed)'
  },
  commentNotFound: {
    code: 'APP_GIT_COMMENT_NOT_FOUND',
    status: 404,
    message: (missing?: { ids: string[] }) => missing === undefined ? 'No comment with this id on this merge request' : 'Some comments are not on this merge request',
    details: (missing) => missing === undefined ? undefined : { ids: missing.ids },
    description: 'no such comment on the merge request'
  },
  commentUnknown: {
    code: 'APP_GIT_COMMENT_UNKNOWN',
    status: 400,
    message: 'The comment replied to is not on this merge request',
    details: () => fieldIssue('body.replyTo', 'is not a comment of this merge request'),
    description: 'the comment replied to is not on the merge request'
  },
  commentEmpty: {
    code: 'APP_GIT_COMMENT_EMPTY',
    status: 400,
    message: 'A comment needs some text',
    details: () => fieldIssue('body.body', 'is blank'),
    description: 'the comment is blank'
  },
  tooManyComments: {
    code: 'APP_GIT_TOO_MANY_COMMENTS',
    status: 400,
    message: ({ limit }: { limit: number }) => `At most ${limit} comments per merge request`,
    details: LIMIT,
    description: 'the merge request holds as many comments as it may (`details.limit`)'
  },
  commentReplyPosition: {
    code: 'APP_GIT_COMMENT_REPLY_POSITION',
    status: 400,
    message: 'A reply belongs to its thread\'s position; give no position',
    details: () => fieldIssue('body.position', 'is not allowed on a reply'),
    description: 'a reply gives a position'
  },
  commentPosition: {
    code: 'APP_GIT_COMMENT_POSITION',
    status: 400,
    message: ({ problem }: { field: string, problem: string }) => problem,
    details: ({ field, problem }) => fieldIssue(`body.position.${field}`, problem),
    description: 'an inline position names no file or lines of the merge request\'s commits'
  },
  commentNotYours: {
    code: 'APP_GIT_COMMENT_NOT_YOURS',
    status: 403,
    message: ({ change }: { change: 'edit' | 'delete' }) => change === 'edit' ? 'Only its author may edit a comment' : 'Only its author or a git.admin holder may delete a comment',
    description: 'only the author edits a comment; the author or a `git.admin` holder deletes it'
  },
  commentNotAThread: {
    code: 'APP_GIT_COMMENT_NOT_A_THREAD',
    status: 400,
    message: 'Resolve the thread through its first comment',
    description: 'the comment is a reply: threads are resolved through their first comment'
  },
  threadState: {
    code: 'APP_GIT_THREAD_STATE',
    status: 409,
    message: ({ resolved }: { resolved: boolean }) => resolved ? 'The thread is resolved already' : 'The thread is not resolved',
    description: 'the thread is in that state already'
  },
  reactionExists: {
    code: 'APP_GIT_REACTION_EXISTS',
    status: 409,
    message: ({ emoji }: { emoji: string }) => `You reacted with "${emoji}" already`,
    description: 'the caller reacted with this emoji already'
  },
  reactionNotFound: {
    code: 'APP_GIT_REACTION_NOT_FOUND',
    status: 404,
    message: ({ emoji }: { emoji: string }) => `You have not reacted with "${emoji}"`,
    description: 'the caller has not reacted with this emoji'
  },
  noSuggestion: {
    code: 'APP_GIT_NO_SUGGESTION',
    status: 400,
    message: (_: { id: string }) => 'Only inline comments on the new side holding a ```suggestion block can be applied',
    details: ({ id }) => ({ ids: [id] }),
    description: 'a comment is not inline on the new side, or holds no suggestion block'
  },
  suggestionApplied: {
    code: 'APP_GIT_SUGGESTION_APPLIED',
    status: 409,
    message: (_: { id: string }) => 'This suggestion was applied already',
    details: ({ id }) => ({ ids: [id] }),
    description: 'a suggestion was applied already'
  },
  suggestionOutdated: {
    code: 'APP_GIT_SUGGESTION_OUTDATED',
    status: 409,
    message: (_: { id: string }) => 'The file changed since this suggestion was made',
    details: ({ id }) => ({ ids: [id] }),
    description: 'the file changed since the suggestion was made'
  },
  suggestionsOverlap: {
    code: 'APP_GIT_SUGGESTIONS_OVERLAP',
    status: 400,
    message: ({ path }: { path: string }) => `Suggestions on ${path} cover the same lines; apply them one at a time`,
    description: 'suggestions on one file cover the same lines'
  }
})
