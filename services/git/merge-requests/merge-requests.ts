import { DuplicateKeyError } from '../../store/errors.js'
import { isoString } from '../../platform/iso-dates.js'
import type { Clock } from '../../platform/clock.js'
import type { IdGenerator } from '../../platform/ids.js'
import type { Filter, Store, StoreCollection } from '../../store/types.js'
import {
  MR_LIMITS, type CreateMergeRequestBodyT, type ListMergeRequestsQueryT, type MergeMethodT, type MergeRequestT, type UpdateMergeRequestBodyT
} from '../../../schemas/git-merge-requests.js'
import { gitErrors } from '../errors.js'
import { checkRefName } from '../names.js'
import type { MergePlumbing } from './merge-tree.js'
import type { RepoReader } from '../reader.js'
import type { Repo } from '../repositories.js'
import type { Reviews } from './reviews.js'
import type { RepoLabels } from '../labels.js'
import type { Mr, MrRecord } from './records.js'

export interface MergeRequestDeps {
  clock: Clock
  newId: IdGenerator
  reader: RepoReader
  merges: MergePlumbing
  reviews: Reviews
  labels: RepoLabels
  /** Whether a user may read the repository (`git.read` in the project, or as a member of it): who may be assigned or asked to review. */
  canRead: (repo: Repo, userId: string) => Promise<boolean>
}

type MrHook = (repo: Repo, mr: Mr, moved: { source: boolean, target: boolean }) => Promise<void>

/**
 * Merge requests: their records, numbered per repository, and the branch
 * heads they last saw. A push (or an API merge) moves branches under them;
 * `refresh` records the new heads, recomputes the merge base, makes earlier
 * reviews stale and notices a merge that arrived by a push.
 */
export class MergeRequests {
  private readonly records: StoreCollection<MrRecord>
  private readonly counters: StoreCollection<{ next: number }>
  private readonly movedHooks: MrHook[] = []

  constructor (store: Store, private readonly deps: MergeRequestDeps) {
    this.records = store.collection<MrRecord>('git_merge_requests')
    this.counters = store.collection<{ next: number }>('git_mr_counters')
  }

  async init (): Promise<void> {
    await this.records.createIndex({ repoId: 1, iid: 1 }, { unique: true })
    await this.records.createIndex({ repoId: 1, state: 1, iid: 1 })
    await this.records.createIndex({ repoId: 1, openPair: 1 }, { unique: true })
  }

  /** What else must follow a moved branch (inline comments going outdated) joins here. */
  onMoved (hook: MrHook): void {
    this.movedHooks.push(hook)
  }

  async create (repo: Repo, authorId: string, input: CreateMergeRequestBodyT): Promise<Mr> {
    const sourceBranch = checkRefName(input.sourceBranch, 'body.sourceBranch', 'branch')
    const targetBranch = checkRefName(input.targetBranch ?? repo.defaultBranch, 'body.targetBranch', 'branch')
    if (sourceBranch === targetBranch) throw gitErrors.mrSameBranch()
    const headSha = await this.branchHead(repo, sourceBranch, 'body.sourceBranch')
    const targetSha = await this.branchHead(repo, targetBranch, 'body.targetBranch')
    const mergeBaseSha = await this.deps.merges.mergeBase(repo.gitDir, targetSha, headSha)
    if (mergeBaseSha === null) throw gitErrors.mrUnrelated()
    if (await this.deps.merges.isAncestor(repo.gitDir, headSha, targetSha)) throw gitErrors.mrNothingToMerge({ source: sourceBranch, target: targetBranch })
    await this.refuseSecondOpen(repo._id, sourceBranch, targetBranch)
    const counter = await this.counters.findOneAndUpdate({ _id: repo._id }, { $inc: { next: 1 } }, { upsert: true, returnDocument: 'after' })
    const now = this.deps.clock.now()
    const record: Mr = {
      _id: this.deps.newId(),
      repoId: repo._id,
      iid: counter?.next ?? 1,
      title: input.title.trim(),
      description: (input.description ?? '').trim(),
      draft: input.draft ?? false,
      state: 'open',
      sourceBranch,
      targetBranch,
      headSha,
      targetSha,
      mergeBaseSha,
      sourceBranchExists: true,
      authorId,
      ...await this.people(repo, input),
      openPair: openPair(sourceBranch, targetBranch),
      createdAt: now,
      updatedAt: now,
      closedAt: null,
      closedBy: null,
      mergedAt: null,
      mergedBy: null,
      mergeMethod: null,
      mergeCommitSha: null
    }
    if (record.title === '') throw gitErrors.mrTitleRequired()
    try {
      await this.records.insertOne(record)
    } catch (error) {
      // Another create for the same branches won between the check above and this insert.
      if (error instanceof DuplicateKeyError) await this.refuseSecondOpen(repo._id, sourceBranch, targetBranch)
      throw error
    }
    await this.deps.merges.keepHead(repo.gitDir, record.iid, headSha)
    return record
  }

  /** One merge request, brought up to date with its branches. */
  async get (repo: Repo, iid: number): Promise<Mr> {
    const record = await this.records.findOne({ repoId: repo._id, iid })
    if (record === null) throw gitErrors.mrNotFound()
    return await this.refresh(repo, record)
  }

  async list (repo: Repo, query: ListMergeRequestsQueryT): Promise<{ items: Mr[], nextCursor: string | null }> {
    const limit = query.limit ?? MR_LIMITS.pageDefault
    const filter: Filter = { repoId: repo._id }
    if ((query.state ?? 'open') !== 'all') filter.state = query.state ?? 'open'
    if (query.author !== undefined) filter.authorId = query.author
    if (query.target !== undefined) filter.targetBranch = query.target
    if (query.source !== undefined) filter.sourceBranch = query.source
    if (query.draft !== undefined) filter.draft = query.draft
    if (query.assignee !== undefined) filter.assignees = query.assignee
    if (query.reviewer !== undefined) filter.reviewers = query.reviewer
    if (query.label !== undefined) {
      const labelId = await this.deps.labels.idOf(repo, query.label)
      if (labelId === null) return { items: [], nextCursor: null }
      filter.labelIds = labelId
    }
    if (query.cursor !== undefined) filter.iid = { $lt: Number(query.cursor) }
    const page = await this.records.find(filter, { sort: { iid: -1 }, limit: limit + 1 }).toArray()
    const items = page.slice(0, limit)
    return { items, nextCursor: page.length > limit ? String(items[items.length - 1].iid) : null }
  }

  async update (repo: Repo, mr: Mr, input: UpdateMergeRequestBodyT): Promise<Mr> {
    const changes: Partial<MrRecord> = { updatedAt: this.deps.clock.now() }
    if (input.title !== undefined) {
      changes.title = input.title.trim()
      if (changes.title === '') throw gitErrors.mrTitleRequired()
    }
    if (input.description !== undefined) changes.description = input.description.trim()
    if (input.draft !== undefined) changes.draft = input.draft
    Object.assign(changes, await this.people(repo, input, mr))
    if (input.targetBranch !== undefined && input.targetBranch !== mr.targetBranch) {
      if (mr.state !== 'open') throw gitErrors.mrNotOpen()
      const targetBranch = checkRefName(input.targetBranch, 'body.targetBranch', 'branch')
      if (targetBranch === mr.sourceBranch) throw gitErrors.mrSameBranch()
      const targetSha = await this.branchHead(repo, targetBranch, 'body.targetBranch')
      const mergeBaseSha = await this.deps.merges.mergeBase(repo.gitDir, targetSha, mr.headSha)
      if (mergeBaseSha === null) throw gitErrors.mrUnrelated()
      Object.assign(changes, { targetBranch, targetSha, mergeBaseSha, openPair: openPair(mr.sourceBranch, targetBranch) })
    }
    return await this.change(mr, changes)
  }

  async close (mr: Mr, by: string): Promise<Mr> {
    if (mr.state !== 'open') throw gitErrors.mrNotOpen()
    return await this.change(mr, { state: 'closed', openPair: mr._id, closedAt: this.deps.clock.now(), closedBy: by, updatedAt: this.deps.clock.now() }, { state: 'open' })
  }

  async reopen (repo: Repo, mr: Mr): Promise<Mr> {
    if (mr.state !== 'closed') throw gitErrors.mrNotClosed({ merged: mr.state === 'merged' })
    // A closed merge request stops following its branches, so the source is looked at now.
    if (!(await this.deps.reader.refExists(repo.gitDir, `refs/heads/${mr.sourceBranch}`))) throw gitErrors.mrSourceMissing({ branch: mr.sourceBranch })
    const reopened = await this.change(mr, { state: 'open', openPair: openPair(mr.sourceBranch, mr.targetBranch), closedAt: null, closedBy: null, updatedAt: this.deps.clock.now() }, { state: 'closed' })
    return await this.refresh(repo, reopened)
  }

  /** Records what an API merge did; 409 if someone closed or merged it meanwhile. */
  async markMerged (mr: Mr, by: string, method: MergeMethodT, commitSha: string, sourceDeleted: boolean): Promise<Mr> {
    const now = this.deps.clock.now()
    return await this.change(mr, { state: 'merged', openPair: mr._id, mergedAt: now, mergedBy: by, mergeMethod: method, mergeCommitSha: commitSha, targetSha: commitSha, updatedAt: now, ...(sourceDeleted ? { sourceBranchExists: false } : {}) }, { state: 'open' })
  }

  /** After a push: every open merge request of the repository follows its branches. */
  async afterPush (repo: Repo): Promise<void> {
    for (const mr of await this.records.find({ repoId: repo._id, state: 'open' }).toArray()) await this.refresh(repo, mr)
  }

  /**
   * Brings an open merge request up to date with its branches. The update is
   * conditional on the heads it read, so two refreshes racing (a push hook
   * and a read) record one change once.
   */
  async refresh (repo: Repo, mr: Mr): Promise<Mr> {
    if (mr.state !== 'open') return mr
    const source = await this.deps.reader.refExists(repo.gitDir, `refs/heads/${mr.sourceBranch}`) ? await this.deps.reader.resolveCommit(repo.gitDir, `refs/heads/${mr.sourceBranch}`) : null
    const target = await this.deps.reader.refExists(repo.gitDir, `refs/heads/${mr.targetBranch}`) ? await this.deps.reader.resolveCommit(repo.gitDir, `refs/heads/${mr.targetBranch}`) : null
    const headSha = source ?? mr.headSha
    const targetSha = target ?? mr.targetSha
    const moved = { source: headSha !== mr.headSha, target: targetSha !== mr.targetSha }
    if (!moved.source && !moved.target && (source !== null) === mr.sourceBranchExists) return mr
    const changes: Partial<MrRecord> = { headSha, targetSha, sourceBranchExists: source !== null, updatedAt: this.deps.clock.now() }
    if (moved.source || moved.target) changes.mergeBaseSha = await this.deps.merges.mergeBase(repo.gitDir, targetSha, headSha) ?? mr.mergeBaseSha
    // A merge pushed by hand (or a fast-forward outside the API) leaves the source inside the target.
    if (source !== null && target !== null && moved.target && await this.deps.merges.isAncestor(repo.gitDir, source, target)) {
      Object.assign(changes, { state: 'merged', openPair: mr._id, mergedAt: this.deps.clock.now(), mergedBy: null, mergeMethod: null, mergeCommitSha: target })
    }
    const updated = await this.records.findOneAndUpdate({ _id: mr._id, state: 'open', headSha: mr.headSha, targetSha: mr.targetSha }, { $set: changes }, { returnDocument: 'after' })
    if (updated === null) return (await this.records.findOne({ _id: mr._id })) ?? mr
    if (moved.source) {
      await this.deps.merges.keepHead(repo.gitDir, mr.iid, headSha)
      await this.deps.reviews.markStale(mr._id, headSha)
    }
    for (const hook of this.movedHooks) await hook(repo, updated, moved)
    return updated
  }

  /** A deleted label leaves the merge requests that carried it. */
  async dropLabel (repo: Repo, labelId: string): Promise<void> {
    await this.records.updateMany({ repoId: repo._id, labelIds: labelId }, { $pull: { labelIds: labelId } })
  }

  async deleteForRepo (repo: Repo): Promise<string[]> {
    const ids = (await this.records.find({ repoId: repo._id }, { projection: { _id: 1 } }).toArray()).map((mr) => mr._id)
    await this.records.deleteMany({ repoId: repo._id })
    await this.counters.deleteOne({ _id: repo._id })
    return ids
  }

  async view (mr: Mr): Promise<MergeRequestT> {
    return (await this.views([mr]))[0]
  }

  /** Views of merge requests of one repository, their label names read at once. */
  async views (mrs: Mr[]): Promise<MergeRequestT[]> {
    if (mrs.length === 0) return []
    const names = await this.deps.labels.namesOf(mrs[0].repoId, mrs.flatMap((mr) => mr.labelIds))
    return mrs.map((mr) => this.toView(mr, names))
  }

  private toView (mr: Mr, labelNames: Map<string, string>): MergeRequestT {
    const { _id, repoId: _repo, labelIds, openPair: _pair, createdAt, updatedAt, closedAt, mergedAt, ...rest } = mr
    return {
      id: _id,
      ...rest,
      labels: labelIds.flatMap((id) => labelNames.get(id) ?? []),
      createdAt: isoString(createdAt),
      updatedAt: isoString(updatedAt),
      closedAt: closedAt === null ? null : isoString(closedAt),
      mergedAt: mergedAt === null ? null : isoString(mergedAt)
    }
  }

  private async change (mr: Mr, changes: Partial<MrRecord>, expect: Partial<MrRecord> = {}): Promise<Mr> {
    let updated: Mr | null
    try {
      updated = await this.records.findOneAndUpdate({ _id: mr._id, ...expect } as Filter, { $set: changes }, { returnDocument: 'after' })
    } catch (error) {
      if (error instanceof DuplicateKeyError) await this.refuseSecondOpen(mr.repoId, changes.sourceBranch ?? mr.sourceBranch, changes.targetBranch ?? mr.targetBranch)
      throw error
    }
    if (updated === null) throw gitErrors.mrStateChanged()
    return updated
  }

  /** 409 naming the open merge request that holds these branches, if there is one. */
  private async refuseSecondOpen (repoId: string, sourceBranch: string, targetBranch: string): Promise<void> {
    const existing = await this.records.findOne({ repoId, openPair: openPair(sourceBranch, targetBranch) })
    if (existing !== null) throw gitErrors.mrExists({ id: existing._id, iid: existing.iid, source: sourceBranch, target: targetBranch })
  }

  /** Assignees, reviewers and labels as given (each list replaces the old one), people checked to be readers of the repository. */
  private async people (repo: Repo, input: { assignees?: string[], reviewers?: string[], labels?: string[] }, current?: Mr): Promise<Pick<MrRecord, 'assignees' | 'reviewers' | 'labelIds'>> {
    const assignees = [...new Set(input.assignees ?? current?.assignees ?? [])]
    const reviewers = [...new Set(input.reviewers ?? current?.reviewers ?? [])]
    const labelIds = input.labels === undefined ? current?.labelIds ?? [] : await this.deps.labels.idsOf(repo, input.labels, 'body.labels')
    const given = [...new Set([...(input.assignees ?? []), ...(input.reviewers ?? [])])]
    const outsiders: string[] = []
    for (const userId of given) if (!(await this.deps.canRead(repo, userId))) outsiders.push(userId)
    if (outsiders.length > 0) throw gitErrors.mrNotAReader({ ids: outsiders })
    return { assignees, reviewers, labelIds }
  }

  private async branchHead (repo: Repo, branch: string, path: string): Promise<string> {
    const ref = `refs/heads/${branch}`
    if (!(await this.deps.reader.refExists(repo.gitDir, ref))) throw gitErrors.branchUnknown({ branch, path })
    return await this.deps.reader.resolveCommit(repo.gitDir, ref)
  }
}

/** What the unique index holds while a merge request is open: `:` is in no branch name, and in no id. */
const openPair = (sourceBranch: string, targetBranch: string): string => `${sourceBranch}:${targetBranch}`
