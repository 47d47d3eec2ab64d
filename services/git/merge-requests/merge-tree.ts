import type { Clock } from '../../platform/clock.js'
import { GIT_LIMITS, type CommitDiffT, type CommitT } from '../../../schemas/git.js'
import { MR_LIMITS, type MergeMethodT } from '../../../schemas/git-merge-requests.js'
import { attachPatches, parseDiffTree } from '../diff.js'
import { gitErrors } from '../errors.js'
import { GitCommandError, type GitCli } from '../git-cli.js'
import type { RepoReader } from '../reader.js'
import { clean, type Signature } from '../writer.js'

/** A person and the moment, as git's `GIT_AUTHOR_*` / `GIT_COMMITTER_*` take them; `date` is git's raw `<seconds> <zone>`. */
export interface Identity extends Signature { date: string }

export interface MergeInput {
  method: MergeMethodT
  target: string
  head: string
  mergeBase: string
  message: string
  /** Who merges: the committer of every new commit, and the author of a merge commit. */
  merger: Signature
  /** The merge request's author: the author of a squash commit. */
  author: Signature
}

const RAW_DIFF_MAX = 16 * 1024 * 1024
// The identity of the throw-away commits a rebase step merges through; they are never referenced.
const SCAFFOLD: Record<string, string> = {
  GIT_AUTHOR_NAME: 'plinth',
  GIT_AUTHOR_EMAIL: 'plinth@localhost',
  GIT_AUTHOR_DATE: '1000000000 +0000',
  GIT_COMMITTER_NAME: 'plinth',
  GIT_COMMITTER_EMAIL: 'plinth@localhost',
  GIT_COMMITTER_DATE: '1000000000 +0000'
}

/**
 * Merging without a working tree: `git merge-tree --write-tree` computes the
 * merged tree (and names the conflicting files), `git commit-tree` makes the
 * commit, and `update-ref <ref> <new> <old>` moves the branch only if nobody
 * pushed meanwhile. Every git call takes an argument array of object ids and
 * validated names.
 */
export class MergePlumbing {
  constructor (private readonly deps: { git: GitCli, reader: RepoReader, clock: Clock }) {}

  async mergeBase (gitDir: string, a: string, b: string): Promise<string | null> {
    const { stdout, code } = await this.deps.git.run(gitDir, ['merge-base', a, b], { okCodes: [1] })
    return code === 1 ? null : stdout.toString().trim()
  }

  async isAncestor (gitDir: string, ancestor: string, of: string): Promise<boolean> {
    return (await this.deps.git.run(gitDir, ['merge-base', '--is-ancestor', ancestor, of], { okCodes: [1] })).code === 0
  }

  /** The tree of `ours` merged with `theirs`, or the files that conflict (merge-tree exits 1 then). */
  async mergeTree (gitDir: string, ours: string, theirs: string): Promise<{ tree: string, conflicts: string[] }> {
    const { stdout, code } = await this.deps.git.run(gitDir, ['merge-tree', '--write-tree', '--name-only', '--no-messages', '-z', ours, theirs], { okCodes: [1] })
    const [tree, ...files] = stdout.toString('utf8').split('\0').filter((part) => part !== '')
    return { tree, conflicts: code === 1 ? [...new Set(files)] : [] }
  }

  /** The commits of `head` that `base` lacks, oldest first, up to the limit. */
  async commits (gitDir: string, base: string, head: string): Promise<{ items: CommitT[], truncated: boolean }> {
    const { stdout } = await this.deps.git.run(gitDir, ['rev-list', '--reverse', '--topo-order', `${base}..${head}`])
    const ids = stdout.toString().split('\n').filter((id) => id !== '')
    const items = await Promise.all(ids.slice(0, MR_LIMITS.commitsMax).map(async (id) => await this.deps.reader.commit(gitDir, id)))
    return { items, truncated: ids.length > MR_LIMITS.commitsMax }
  }

  /** What the source changes against the merge base, per file, as the commit diff shows it. */
  async diff (gitDir: string, base: string, head: string): Promise<CommitDiffT> {
    const { stdout } = await this.deps.git.run(gitDir, ['diff-tree', '-r', '-M', '-z', '--raw', '--numstat', base, head])
    const all = parseDiffTree(stdout)
    const files = all.slice(0, GIT_LIMITS.diffFilesMax)
    const patch = await this.deps.git.run(gitDir, ['diff-tree', '-r', '-M', '-p', base, head], { maxOutput: RAW_DIFF_MAX })
      .then((result) => result.stdout.toString('utf8'))
      .catch((error: unknown) => { if (gitErrors.outputTooLarge.is(error)) return null; throw error })
    const truncated = (patch === null ? true : attachPatches(files, patch)) || files.length < all.length
    const stats = all.reduce((sum, file) => ({ files: sum.files + 1, additions: sum.additions + file.additions, deletions: sum.deletions + file.deletions }), { files: 0, additions: 0, deletions: 0 })
    return { sha: head, base, files, stats, truncated }
  }

  /** Writes the commits of a merge by `method` and returns the target's new head; the branch itself is not moved here. */
  async build (gitDir: string, input: MergeInput): Promise<string> {
    const { method, target, head } = input
    if (method === 'fast-forward') {
      if (!(await this.isAncestor(gitDir, target, head))) throw gitErrors.mrNotFastForward()
      return head
    }
    if (method === 'rebase') return await this.rebase(gitDir, input)
    const { tree, conflicts } = await this.mergeTree(gitDir, target, head)
    if (conflicts.length > 0) throw gitErrors.mrConflicts({ files: conflicts })
    const now = this.now()
    const committer = { ...input.merger, date: now }
    const author = method === 'squash' ? { ...input.author, date: now } : committer
    const parents = method === 'squash' ? [target] : [target, head]
    return await this.commitTree(gitDir, tree, parents, input.message, author, committer)
  }

  /**
   * Replays the source's commits onto the target one by one, keeping each
   * one's author, date and message. git 2.39's merge-tree has no
   * --merge-base, so each step merges through throw-away commits whose only
   * common ancestor holds the replayed commit's parent tree: the same three-way
   * merge a cherry-pick does.
   */
  private async rebase (gitDir: string, input: MergeInput): Promise<string> {
    const { target, head } = input
    if (await this.isAncestor(gitDir, target, head)) return head
    const { stdout } = await this.deps.git.run(gitDir, ['rev-list', '--reverse', '--topo-order', '--parents', `${target}..${head}`])
    const steps = stdout.toString().split('\n').filter((line) => line !== '').map((line) => line.split(' '))
    if (steps.some((ids) => ids.length > 2)) throw gitErrors.mrRebaseUnsupported({ mergeCommits: true })
    if (steps.length > MR_LIMITS.commitsMax) throw gitErrors.mrRebaseUnsupported({ limit: MR_LIMITS.commitsMax })
    const committer = { ...input.merger, date: this.now() }
    let onto = target
    for (const [commit, parent] of steps) {
      const base = await this.commitTree(gitDir, `${parent}^{tree}`, [], 'base\n', null, null)
      const ours = await this.commitTree(gitDir, `${onto}^{tree}`, [base], 'ours\n', null, null)
      const theirs = await this.commitTree(gitDir, `${commit}^{tree}`, [base], 'theirs\n', null, null)
      const { tree, conflicts } = await this.mergeTree(gitDir, ours, theirs)
      if (conflicts.length > 0) throw gitErrors.mrConflicts({ files: conflicts })
      const original = await this.original(gitDir, commit)
      onto = await this.commitTree(gitDir, tree, [onto], original.message, original.author, committer)
    }
    return onto
  }

  /** Moves `refs/heads/<branch>` from `expected` to `next`; 409 when a push moved it meanwhile. */
  async moveBranch (gitDir: string, branch: string, next: string, expected: string, reason: string): Promise<void> {
    try {
      await this.deps.git.run(gitDir, ['update-ref', '-m', reason, `refs/heads/${branch}`, next, expected])
    } catch (error) {
      // update-ref names the ref when the old value no longer holds; anything else is ours.
      if (error instanceof GitCommandError && /cannot lock ref|but expected|is at/.test(error.result.stderr)) throw gitErrors.mrTargetMoved({ branch, expected })
      throw error
    }
  }

  /**
   * Keeps a merge request's source head reachable under
   * `refs/merge-requests/<iid>/head` (as GitLab does), so its diff and
   * commits survive the source branch's deletion and `git gc`. Pushes cannot
   * write there: the pre-receive hook admits only branches and tags.
   */
  async keepHead (gitDir: string, iid: number, sha: string): Promise<void> {
    await this.deps.git.run(gitDir, ['update-ref', '-m', 'plinth: merge request head', `refs/merge-requests/${iid}/head`, sha])
  }

  /** Deletes a branch if it still points at `expected`; false when it moved (it is kept then). */
  async deleteBranch (gitDir: string, branch: string, expected: string): Promise<boolean> {
    const { code } = await this.deps.git.run(gitDir, ['update-ref', '-m', 'plinth: merged', '-d', `refs/heads/${branch}`, expected], { okCodes: [1, 128] })
    return code === 0
  }

  private async commitTree (gitDir: string, tree: string, parents: string[], message: string, author: Identity | null, committer: Identity | null): Promise<string> {
    const env = author === null || committer === null ? SCAFFOLD : { ...identityEnv('AUTHOR', author), ...identityEnv('COMMITTER', committer) }
    const args = ['commit-tree', tree, ...parents.flatMap((parent) => ['-p', parent]), '-F', '-']
    return (await this.deps.git.run(gitDir, args, { input: message.endsWith('\n') ? message : `${message}\n`, env })).stdout.toString().trim()
  }

  /** A commit's author (with its original date and zone) and its message, byte for byte. */
  private async original (gitDir: string, commit: string): Promise<{ author: Identity, message: string }> {
    const { stdout } = await this.deps.git.run(gitDir, ['show', '-s', '--format=%an%x00%ae%x00%ad%x00%B', '--date=raw', commit])
    const [name, email, date, ...message] = stdout.toString('utf8').split('\0')
    return { author: { name, email, date }, message: message.join('\0').replace(/\n$/, '') }
  }

  private now (): string {
    return `${Math.floor(this.deps.clock.nowMs() / 1000)} +0000`
  }
}

function identityEnv (role: 'AUTHOR' | 'COMMITTER', who: Identity): Record<string, string> {
  return { [`GIT_${role}_NAME`]: clean(who.name), [`GIT_${role}_EMAIL`]: clean(who.email), [`GIT_${role}_DATE`]: who.date }
}
