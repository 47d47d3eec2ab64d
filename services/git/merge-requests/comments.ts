import { isoString } from '../../platform/iso-dates.js'
import type { Clock } from '../../platform/clock.js'
import type { IdGenerator } from '../../platform/ids.js'
import type { Store, StoreCollection, WithId } from '../../store/types.js'
import { MR_LIMITS, type CommentT, type CreateCommentBodyT, type PositionT } from '../../../schemas/git-merge-requests.js'
import type { RepoActor } from '../access.js'
import { gitErrors } from '../errors.js'
import type { GitCli } from '../git-cli.js'
import type { MergePlumbing } from './merge-tree.js'
import { checkTreePath } from '../names.js'
import type { RepoReader } from '../reader.js'
import type { Mr } from './records.js'
import type { Repo } from '../repositories.js'

type CommentRecord = {
  mrId: string
  authorId: string
  body: string
  /** The thread's first comment; null for a first comment. */
  replyTo: string | null
  position: PositionT | null
  outdated: boolean
  resolved: boolean
  resolvedBy: string | null
  appliedIn?: string | null
  createdAt: Date
  updatedAt: Date
}

export type Comment = WithId<CommentRecord>

function toView (record: Comment): CommentT {
  const { _id, mrId: _mr, createdAt, updatedAt, ...rest } = record
  return { id: _id, ...rest, appliedIn: rest.appliedIn ?? null, createdAt: isoString(createdAt), updatedAt: isoString(updatedAt) }
}

/**
 * Comments on merge requests: general ones, and inline ones anchored at a
 * line of a file as one commit of the merge request shows it (`new` side: a
 * commit of the source; `old` side: the merge base). Replies join the thread
 * of a first comment, and threads are resolved as a whole. When a push
 * changes the file under an inline comment, the comment is outdated: it
 * stays, but no longer points at the code being merged.
 */
export class Comments {
  private readonly records: StoreCollection<CommentRecord>

  constructor (store: Store, private readonly deps: { clock: Clock, newId: IdGenerator, git: GitCli, reader: RepoReader, plumbing: MergePlumbing }) {
    this.records = store.collection<CommentRecord>('git_mr_comments')
  }

  async init (): Promise<void> {
    await this.records.createIndex({ mrId: 1, createdAt: 1 })
  }

  async list (repo: Repo, mr: Mr): Promise<CommentT[]> {
    await this.markOutdated(repo, mr)
    return (await this.records.find({ mrId: mr._id }, { sort: { createdAt: 1, _id: 1 } }).toArray()).map(toView)
  }

  async get (mr: Mr, commentId: string): Promise<Comment> {
    const comment = await this.records.findOne({ _id: commentId, mrId: mr._id })
    if (comment === null) throw gitErrors.commentNotFound()
    return comment
  }

  async create (repo: Repo, mr: Mr, authorId: string, input: CreateCommentBodyT): Promise<CommentT> {
    const body = checkBody(input.body)
    if (await this.records.countDocuments({ mrId: mr._id }) >= MR_LIMITS.commentsPerMr) {
      throw gitErrors.tooManyComments({ limit: MR_LIMITS.commentsPerMr })
    }
    let replyTo: string | null = null
    if (input.replyTo !== undefined) {
      if (input.position !== undefined) throw gitErrors.commentReplyPosition()
      const parent = await this.get(mr, input.replyTo).catch(() => { throw gitErrors.commentUnknown() })
      replyTo = parent.replyTo ?? parent._id
    }
    const position = input.position === undefined ? null : await this.checkPosition(repo, mr, input.position)
    const now = this.deps.clock.now()
    const record: Comment = { _id: this.deps.newId(), mrId: mr._id, authorId, body, replyTo, position, outdated: false, resolved: false, resolvedBy: null, appliedIn: null, createdAt: now, updatedAt: now }
    await this.records.insertOne(record)
    return toView(record)
  }

  async edit (comment: Comment, userId: string, body: string): Promise<CommentT> {
    if (comment.authorId !== userId) throw gitErrors.commentNotYours({ change: 'edit' })
    const updated = await this.records.findOneAndUpdate({ _id: comment._id }, { $set: { body: checkBody(body), updatedAt: this.deps.clock.now() } }, { returnDocument: 'after' })
    if (updated === null) throw gitErrors.commentNotFound()
    return toView(updated)
  }

  /** Deletes a comment (its author, or a `git.admin` holder); a first comment takes its replies along. */
  async delete (comment: Comment, actor: RepoActor): Promise<void> {
    if (comment.authorId !== actor.userId && !actor.permissions.has('git.admin')) throw gitErrors.commentNotYours({ change: 'delete' })
    await this.records.deleteMany({ mrId: comment.mrId, $or: [{ _id: comment._id }, { replyTo: comment._id }] })
  }

  /** Resolves or reopens the thread a comment starts. */
  async resolve (comment: Comment, userId: string, resolved: boolean): Promise<CommentT> {
    if (comment.replyTo !== null) throw gitErrors.commentNotAThread()
    if (comment.resolved === resolved) throw gitErrors.threadState({ resolved })
    const updated = await this.records.findOneAndUpdate({ _id: comment._id }, { $set: { resolved, resolvedBy: resolved ? userId : null } }, { returnDocument: 'after' })
    if (updated === null) throw gitErrors.commentNotFound()
    return toView(updated)
  }

  /**
   * Inline comments whose file changed between the commit they were made on
   * and what the merge request shows now (the source head, or the merge base
   * for the old side) become outdated, once and for good. Run after a push
   * and again before listing, so a reader never races the push hook.
   */
  async markOutdated (repo: Repo, mr: Mr): Promise<void> {
    const inline = await this.records.find({ mrId: mr._id, outdated: false, replyTo: null, position: { $ne: null } }).toArray()
    const changedFiles = new Map<string, Promise<Set<string>>>()
    const changed = async (from: string, to: string): Promise<Set<string>> => {
      const key = `${from}..${to}`
      if (!changedFiles.has(key)) {
        changedFiles.set(key, this.deps.git.run(repo.gitDir, ['diff', '--name-only', '-z', '--no-renames', from, to]).then(({ stdout }) => new Set(stdout.toString('utf8').split('\0'))))
      }
      return await (changedFiles.get(key) as Promise<Set<string>>)
    }
    const stale: string[] = []
    for (const comment of inline) {
      const position = comment.position as PositionT
      const now = position.side === 'new' ? mr.headSha : mr.mergeBaseSha
      if (now !== position.commitSha && (await changed(position.commitSha, now)).has(position.path)) stale.push(comment._id)
    }
    if (stale.length > 0) await this.records.updateMany({ _id: { $in: stale } }, { $set: { outdated: true } })
  }

  /** The comments whose suggestions are to be applied, in the order asked, each checked to be on this merge request. */
  async many (mr: Mr, ids: string[]): Promise<Comment[]> {
    const found = await this.records.find({ mrId: mr._id, _id: { $in: ids } }).toArray()
    const missing = ids.filter((id) => !found.some((comment) => comment._id === id))
    if (missing.length > 0) throw gitErrors.commentNotFound({ ids: missing })
    return ids.map((id) => found.find((comment) => comment._id === id) as Comment)
  }

  async markApplied (ids: string[], commitSha: string): Promise<void> {
    await this.records.updateMany({ _id: { $in: ids } }, { $set: { appliedIn: commitSha } })
  }

  async deleteForMergeRequests (mrIds: string[]): Promise<void> {
    await this.records.deleteMany({ mrId: { $in: mrIds } })
  }

  /**
   * An inline position must point into the merge request: a commit of the
   * source (new side) or the merge base (old side), a file there, and lines
   * the file has.
   */
  private async checkPosition (repo: Repo, mr: Mr, input: PositionT): Promise<PositionT> {
    const path = checkTreePath(input.path, 'body.position.path')
    const invalid = (field: string, problem: string) => gitErrors.commentPosition({ field, problem })
    if (path === '') throw invalid('path', 'names no file')
    if (input.side === 'old' && input.commitSha !== mr.mergeBaseSha) throw invalid('commitSha', 'on the old side must be the merge base')
    if (input.side === 'new' && input.commitSha !== mr.headSha && !(await this.inSource(repo, mr, input.commitSha))) throw invalid('commitSha', 'is not a commit of this merge request')
    const content = await this.deps.reader.blobId(repo.gitDir, input.commitSha, path)
      .then(async (oid) => await this.deps.reader.blobContent(repo.gitDir, oid))
      .catch(() => { throw invalid('path', 'is not a file at this commit') })
    const lines = content.length === 0 ? 0 : content.toString('utf8').replace(/\n$/, '').split('\n').length
    if (input.line > lines) throw invalid('line', `is past the end of the file (${lines} lines)`)
    if (input.startLine !== undefined && input.startLine > input.line) throw invalid('startLine', 'comes after line')
    return { ...input, path }
  }

  private async inSource (repo: Repo, mr: Mr, sha: string): Promise<boolean> {
    const isCommit = await this.deps.git.run(repo.gitDir, ['cat-file', '-e', `${sha}^{commit}`], { okCodes: [1, 128] })
    if (isCommit.code !== 0) return false
    return await this.deps.plumbing.isAncestor(repo.gitDir, sha, mr.headSha) && !(await this.deps.plumbing.isAncestor(repo.gitDir, sha, mr.mergeBaseSha))
  }
}

function checkBody (body: string): string {
  const trimmed = body.trim()
  if (trimmed === '') throw gitErrors.commentEmpty()
  return trimmed
}
