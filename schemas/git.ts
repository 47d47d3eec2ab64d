import { Type, type Static } from '@sinclair/typebox'
import { Envelope, LOCATION, withHeaders } from './envelope.js'
import { DateTime, Deleted, Id } from './common.js'

/** Limits of the git family, used by both the schemas and the services. */
export const GIT_LIMITS = {
  logPageDefault: 30,
  logPageMax: 100,
  /** Blobs up to this size come inline in the JSON view; bigger ones only through the raw download. */
  inlineBlobBytes: 1024 * 1024,
  /** A commit's structured diff carries patches up to this many bytes in all; past it, files come with stats only. */
  diffPatchBytes: 2 * 1024 * 1024,
  diffFilesMax: 1000,
  deployKeysPerRepo: 50,
  protectedBranchesPerRepo: 50,
  protectedTagsPerRepo: 50,
  labelsPerRepo: 200,
  membersPerRepo: 200
} as const

const RepoSlug = Type.String({ minLength: 1, maxLength: 100, pattern: '^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$', description: 'Letters, digits, `.`, `_` and `-`, unique in the project; not ending in `.git` (clone URLs add it)' })
const RefName = Type.String({ minLength: 1, maxLength: 255, description: 'A branch or tag name as `git check-ref-format --branch` accepts it (slashes allowed)' })
const Revision = Type.String({ minLength: 1, maxLength: 255, description: 'A branch, a tag, a full ref, HEAD or a commit id (abbreviated from 4 hex digits)' })
const Visibility = Type.Union([Type.Literal('public'), Type.Literal('private')], { description: '`public`: anyone may clone and fetch, even without a credential; `private`: project members with `git.read` only' })

export const Repository = Type.Object({
  id: Type.String(),
  projectId: Type.String(),
  slug: Type.String(),
  name: Type.String(),
  description: Type.String(),
  defaultBranch: Type.String(),
  visibility: Visibility,
  empty: Type.Boolean({ description: 'No commit yet: the first push creates the default branch' }),
  cloneUrls: Type.Object({
    http: Type.String({ description: 'Smart HTTP: `git clone <url>`, with a personal access token, platform JWT or deploy key token as the password' }),
    ssh: Type.Union([Type.String(), Type.Null()], { description: 'Git over SSH with a registered SSH key or a deploy key; null when the server has SSH off (GIT_SSH_PORT unset)' })
  }),
  createdBy: Type.String(),
  createdAt: DateTime,
  updatedAt: DateTime
}, { $id: 'GitRepository' })

const Person = Type.Object({ name: Type.String(), email: Type.String(), date: DateTime })

export const Branch = Type.Object({
  name: Type.String(),
  commit: Type.String({ description: 'The commit the branch points at' }),
  default: Type.Boolean(),
  protected: Type.Boolean({ description: 'A protected-branch rule matches it' })
}, { $id: 'GitBranch' })

export const Tag = Type.Object({
  name: Type.String(),
  commit: Type.String({ description: 'The commit the tag points at, peeled through annotated tags' }),
  annotated: Type.Boolean(),
  message: Type.Union([Type.String(), Type.Null()]),
  tagger: Type.Union([Person, Type.Null()])
}, { $id: 'GitTag' })

export const Commit = Type.Object({
  sha: Type.String(),
  parents: Type.Array(Type.String()),
  title: Type.String({ description: 'The first line of the message' }),
  message: Type.String(),
  author: Person,
  committer: Person
}, { $id: 'GitCommit' })

const CommitPage = Type.Object({
  items: Type.Array(Type.Ref(Commit)),
  nextCursor: Type.Union([Type.String(), Type.Null()], { description: 'Pass as `cursor` for the next page; null at the end of the history' })
})

const FileChangeStatus = Type.Union(['added', 'modified', 'deleted', 'renamed', 'copied', 'typechange'].map((status) => Type.Literal(status)))

export const FileDiff = Type.Object({
  path: Type.String(),
  oldPath: Type.Union([Type.String(), Type.Null()], { description: 'The path before a rename or copy' }),
  status: FileChangeStatus,
  additions: Type.Integer(),
  deletions: Type.Integer(),
  binary: Type.Boolean(),
  patch: Type.Union([Type.String(), Type.Null()], { description: 'The unified diff of this file; null for binary files or once the diff is past its size limit' })
}, { $id: 'GitFileDiff' })

export const CommitDiff = Type.Object({
  sha: Type.String(),
  base: Type.Union([Type.String(), Type.Null()], { description: 'The first parent it is compared with; null for a root commit' }),
  files: Type.Array(Type.Ref(FileDiff)),
  stats: Type.Object({ files: Type.Integer(), additions: Type.Integer(), deletions: Type.Integer() }),
  truncated: Type.Boolean({ description: `More than ${GIT_LIMITS.diffFilesMax} files, or patches past ${GIT_LIMITS.diffPatchBytes} bytes: the raw diff has everything` })
}, { $id: 'GitCommitDiff' })

const TreeEntry = Type.Object({
  name: Type.String(),
  path: Type.String(),
  type: Type.Union([Type.Literal('blob'), Type.Literal('tree'), Type.Literal('commit')], { description: '`commit` is a submodule' }),
  mode: Type.String(),
  oid: Type.String()
})

export const Tree = Type.Object({
  commit: Type.String(),
  path: Type.String(),
  entries: Type.Array(TreeEntry, { description: 'Folders first, then files, each by name' })
}, { $id: 'GitTree' })

export const Blob = Type.Object({
  commit: Type.String(),
  path: Type.String(),
  oid: Type.String(),
  size: Type.Integer(),
  binary: Type.Boolean(),
  encoding: Type.Union([Type.Literal('utf8'), Type.Literal('base64'), Type.Null()], { description: 'How `content` is written; null when the blob is too big to come inline' }),
  content: Type.Union([Type.String(), Type.Null()], { description: `The content when the blob has at most ${GIT_LIMITS.inlineBlobBytes} bytes; otherwise download it raw` })
}, { $id: 'GitBlob' })

export const DeployKey = Type.Object({
  id: Type.String(),
  title: Type.String(),
  key: Type.String({ description: 'The SSH public key, `type base64`' }),
  fingerprint: Type.String(),
  readOnly: Type.Boolean(),
  tokenHint: Type.String({ description: 'Enough of the HTTP token to recognise it' }),
  createdBy: Type.String(),
  createdAt: DateTime,
  lastUsedAt: Type.Union([DateTime, Type.Null()])
}, { $id: 'GitDeployKey' })

const CreatedDeployKey = Type.Object({
  ...DeployKey.properties,
  token: Type.String({ description: 'For git over HTTP, as the password (any user name). Shown once; only its hash is stored' })
})

const PushAccess = Type.Union([Type.Literal('write'), Type.Literal('admin'), Type.Literal('nobody')], {
  description: 'Who may push to matching branches: callers with `git.write` (and write deploy keys), only `git.admin` holders, or nobody (changes come through the API)'
})

export const ProtectedBranch = Type.Object({
  id: Type.String(),
  pattern: Type.String(),
  push: PushAccess,
  allowForcePush: Type.Boolean(),
  allowDelete: Type.Boolean(),
  merge: Type.Union([Type.Literal('write'), Type.Literal('admin'), Type.Literal('nobody')], { description: 'Who may merge merge requests into matching branches, as enforced: never looser than `push` unless `mergeExplicit`' }),
  mergeExplicit: Type.Boolean({ description: 'True when `merge` was set on the rule; false when it follows `push` (a frozen branch takes no merges either)' }),
  requiredApprovals: Type.Integer({ description: 'Approvals a merge request needs before it may be merged into a matching branch' }),
  createdAt: DateTime,
  updatedAt: DateTime
}, { $id: 'GitProtectedBranch' })

const LabelName = Type.String({ minLength: 1, maxLength: 50, pattern: '^[^\\x00-\\x1f,]+$', description: 'Unique in the repository, letter case aside; no commas or control characters' })
const LabelColor = Type.String({ pattern: '^#[0-9A-Fa-f]{6}$', description: '`#rrggbb`, kept in lower case', examples: ['#d73a4a'] })

export const Label = Type.Object({
  id: Type.String(),
  name: Type.String(),
  color: Type.String(),
  description: Type.String(),
  createdAt: DateTime,
  updatedAt: DateTime
}, { $id: 'GitLabel' })

const RepoRole = Type.Union([Type.Literal('read'), Type.Literal('write'), Type.Literal('admin')], {
  description: 'What the member may do in this repository, as `git.read`, `git.write` or `git.admin` would allow there; project permissions still count, the stronger wins'
})

export const RepoMember = Type.Object({
  userId: Type.String(),
  email: Type.String(),
  name: Type.String(),
  role: RepoRole,
  addedBy: Type.String(),
  createdAt: DateTime,
  updatedAt: DateTime
}, { $id: 'GitRepositoryMember' })

const TagAccess = Type.Union([Type.Literal('write'), Type.Literal('admin'), Type.Literal('nobody')], {
  description: 'Who may: callers with `git.write` in the repository (and write deploy keys), only `git.admin` holders, or nobody'
})

export const ProtectedTag = Type.Object({
  id: Type.String(),
  pattern: Type.String(),
  create: TagAccess,
  update: TagAccess,
  delete: TagAccess,
  createdAt: DateTime,
  updatedAt: DateTime
}, { $id: 'GitProtectedTag' })

export const GitProjectParams = Type.Object({ projectId: Id })
export const RepoParams = Type.Object({ projectId: Id, repoSlug: RepoSlug })
export const CommitParams = Type.Object({ projectId: Id, repoSlug: RepoSlug, sha: Type.String({ pattern: '^[0-9a-f]{4,40}$' }) })
export const DeployKeyParams = Type.Object({ projectId: Id, repoSlug: RepoSlug, keyId: Id })
export const ProtectedBranchParams = Type.Object({ projectId: Id, repoSlug: RepoSlug, ruleId: Id })
export const LabelParams = Type.Object({ projectId: Id, repoSlug: RepoSlug, labelId: Id })
export const MemberParams = Type.Object({
  projectId: Id,
  repoSlug: RepoSlug,
  user: Type.String({ minLength: 1, maxLength: 100, pattern: '^([0-9A-Za-z_-]{1,64}|[^\\s@/]{1,64}@[^\\s@/]{1,99})$', description: 'A platform user id, or that user\'s e-mail address' })
})

export const RefNameQuery = Type.Object({ name: RefName }, { additionalProperties: false })
export const LogQuery = Type.Object({
  ref: Type.Optional(Revision),
  path: Type.Optional(Type.String({ maxLength: 4096, description: 'Only commits that change this file or folder' })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: GIT_LIMITS.logPageMax, default: GIT_LIMITS.logPageDefault })),
  cursor: Type.Optional(Type.String({ pattern: '^[0-9a-f]{40}\\.[0-9]{1,7}$', description: 'nextCursor of the previous page' }))
}, { additionalProperties: false })
export const TreeQuery = Type.Object({
  ref: Type.Optional(Revision),
  path: Type.Optional(Type.String({ maxLength: 4096, description: 'A folder; the root when omitted' }))
}, { additionalProperties: false })
export const BlobQuery = Type.Object({
  ref: Type.Optional(Revision),
  path: Type.String({ minLength: 1, maxLength: 4096 })
}, { additionalProperties: false })

export const CreateRepoBody = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 100 }),
  slug: Type.Optional(RepoSlug),
  description: Type.Optional(Type.String({ maxLength: 2000 })),
  visibility: Type.Optional(Visibility),
  defaultBranch: Type.Optional(RefName),
  readme: Type.Optional(Type.Boolean({ description: 'Start with one commit holding a README.md on the default branch' }))
}, { additionalProperties: false })
export const UpdateRepoBody = Type.Object({
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
  slug: Type.Optional(RepoSlug),
  description: Type.Optional(Type.String({ maxLength: 2000 })),
  visibility: Type.Optional(Visibility),
  defaultBranch: Type.Optional(RefName)
}, { additionalProperties: false, minProperties: 1 })
export const CreateBranchBody = Type.Object({
  name: RefName,
  from: Type.Optional(Revision)
}, { additionalProperties: false })
export const CreateTagBody = Type.Object({
  name: RefName,
  target: Type.Optional(Revision),
  message: Type.Optional(Type.String({ minLength: 1, maxLength: 10_000, description: 'Makes an annotated tag, with the caller as tagger; without it the tag is lightweight' }))
}, { additionalProperties: false })
export const CreateDeployKeyBody = Type.Object({
  title: Type.String({ minLength: 1, maxLength: 100 }),
  key: Type.String({ minLength: 1, maxLength: 16 * 1024, description: 'An OpenSSH public key line' }),
  readOnly: Type.Optional(Type.Boolean({ default: true, description: 'A read-only key can clone and fetch; a write key can push too' }))
}, { additionalProperties: false })
export const ProtectedBranchBody = Type.Object({
  pattern: Type.String({ minLength: 1, maxLength: 255, description: 'A branch name, where `*` stands for part of one path component and `**` for any number of them' }),
  push: Type.Optional(PushAccess),
  allowForcePush: Type.Optional(Type.Boolean({ description: 'False when a rule is created without it' })),
  allowDelete: Type.Optional(Type.Boolean({ description: 'False when a rule is created without it' })),
  merge: Type.Optional(Type.Union([Type.Literal('write'), Type.Literal('admin'), Type.Literal('nobody'), Type.Null()], { description: 'Who may merge merge requests into matching branches: `git.write` holders, only `git.admin` holders, or nobody. Absent on create, or `null`, it follows `push` (a branch nobody may push to takes no merges); a level given here is kept as written, even looser than `push`' })),
  requiredApprovals: Type.Optional(Type.Integer({ minimum: 0, maximum: 20, description: 'Approvals (not stale, not dismissed, not by the author) a merge request needs before it may be merged; 0 when a rule is created without it' }))
}, { additionalProperties: false })
// No defaults in rule bodies: a partial update would be filled with them and reset what it does not name.
export const UpdateProtectedBranchBody = Type.Partial(ProtectedBranchBody, { additionalProperties: false, minProperties: 1 })
export const ProtectedTagBody = Type.Object({
  pattern: Type.String({ minLength: 1, maxLength: 255, description: 'A tag name, where `*` stands for part of one path component and `**` for any number of them (`v*`, `release/**`)' }),
  create: Type.Optional(Type.Union([Type.Literal('write'), Type.Literal('admin'), Type.Literal('nobody')], { description: 'Who may create matching tags; `admin` when a rule is created without it' })),
  update: Type.Optional(Type.Union([Type.Literal('write'), Type.Literal('admin'), Type.Literal('nobody')], { description: 'Who may move matching tags to another object; `nobody` when a rule is created without it' })),
  delete: Type.Optional(Type.Union([Type.Literal('write'), Type.Literal('admin'), Type.Literal('nobody')], { description: 'Who may delete matching tags; `nobody` when a rule is created without it' }))
}, { additionalProperties: false })
export const UpdateProtectedTagBody = Type.Partial(ProtectedTagBody, { additionalProperties: false, minProperties: 1 })
export const CreateLabelBody = Type.Object({
  name: LabelName,
  color: LabelColor,
  description: Type.Optional(Type.String({ maxLength: 500 }))
}, { additionalProperties: false })
export const UpdateLabelBody = Type.Partial(CreateLabelBody, { additionalProperties: false, minProperties: 1 })
export const MemberBody = Type.Object({ role: RepoRole }, { additionalProperties: false })

const Raw = (description: string, type: string) => ({ description, content: { [type]: { schema: { type: 'string', format: 'binary' } } } })

export const GitResponses = {
  repositories: { 200: Envelope(Type.Array(Type.Ref(Repository))) },
  repositoryCreated: { 201: withHeaders(Envelope(Type.Ref(Repository)), LOCATION) },
  repository: { 200: Envelope(Type.Ref(Repository)) },
  deleted: { 200: Envelope(Deleted) },
  branches: { 200: Envelope(Type.Array(Type.Ref(Branch))) },
  branchCreated: { 201: withHeaders(Envelope(Type.Ref(Branch)), LOCATION) },
  tags: { 200: Envelope(Type.Array(Type.Ref(Tag))) },
  tagCreated: { 201: withHeaders(Envelope(Type.Ref(Tag)), LOCATION) },
  commits: { 200: Envelope(CommitPage) },
  commit: { 200: Envelope(Type.Ref(Commit)) },
  diff: { 200: Envelope(Type.Ref(CommitDiff)) },
  rawDiff: { 200: Raw('The commit\'s diff against its first parent, as `git diff` prints it', 'text/plain') },
  tree: { 200: Envelope(Type.Ref(Tree)) },
  blob: { 200: Envelope(Type.Ref(Blob)) },
  raw: { 200: Raw('The file\'s bytes, streamed, with a Content-Type sniffed from its content', 'application/octet-stream') },
  deployKeys: { 200: Envelope(Type.Array(Type.Ref(DeployKey))) },
  deployKeyCreated: { 201: withHeaders(Envelope(CreatedDeployKey), LOCATION) },
  protectedBranches: { 200: Envelope(Type.Array(Type.Ref(ProtectedBranch))) },
  protectedBranchCreated: { 201: withHeaders(Envelope(Type.Ref(ProtectedBranch)), LOCATION) },
  protectedBranch: { 200: Envelope(Type.Ref(ProtectedBranch)) },
  protectedTags: { 200: Envelope(Type.Array(Type.Ref(ProtectedTag))) },
  protectedTagCreated: { 201: withHeaders(Envelope(Type.Ref(ProtectedTag)), LOCATION) },
  protectedTag: { 200: Envelope(Type.Ref(ProtectedTag)) },
  labels: { 200: Envelope(Type.Array(Type.Ref(Label))) },
  labelCreated: { 201: withHeaders(Envelope(Type.Ref(Label)), LOCATION) },
  label: { 200: Envelope(Type.Ref(Label)) },
  members: { 200: Envelope(Type.Array(Type.Ref(RepoMember))) },
  member: { 200: Envelope(Type.Ref(RepoMember)) }
}

export const gitSchemas = [Repository, Branch, Tag, Commit, FileDiff, CommitDiff, Tree, Blob, DeployKey, ProtectedBranch, ProtectedTag, Label, RepoMember]

export type RepositoryT = Static<typeof Repository>
export type BranchT = Static<typeof Branch>
export type TagT = Static<typeof Tag>
export type CommitT = Static<typeof Commit>
export type FileDiffT = Static<typeof FileDiff>
export type CommitDiffT = Static<typeof CommitDiff>
export type TreeT = Static<typeof Tree>
export type BlobT = Static<typeof Blob>
export type DeployKeyT = Static<typeof DeployKey>
export type ProtectedBranchT = Static<typeof ProtectedBranch>
export type PushAccessT = Static<typeof PushAccess>
export type CreateRepoBodyT = Static<typeof CreateRepoBody>
export type UpdateRepoBodyT = Static<typeof UpdateRepoBody>
export type ProtectedBranchBodyT = Static<typeof ProtectedBranchBody>
export type ProtectedTagT = Static<typeof ProtectedTag>
export type ProtectedTagBodyT = Static<typeof ProtectedTagBody>
export type TagAccessT = Static<typeof TagAccess>
export type LabelT = Static<typeof Label>
export type CreateLabelBodyT = Static<typeof CreateLabelBody>
export type RepoMemberT = Static<typeof RepoMember>
export type RepoRoleT = Static<typeof RepoRole>
