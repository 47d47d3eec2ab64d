import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { commonErrors } from '../../platform/errors.js'
import type { Clock } from '../../platform/clock.js'
import type { PositionT } from '../../../schemas/git-merge-requests.js'
import { actorLevel, type RepoActor } from '../access.js'
import { gitErrors } from '../errors.js'
import type { Comment, Comments } from './comments.js'
import { GitCommandError, type GitCli } from '../git-cli.js'
import type { MergeRequests } from './merge-requests.js'
import type { Mr } from './records.js'
import type { ProtectedBranches } from '../protection.js'
import type { Repo } from '../repositories.js'
import { clean, type Signature } from '../writer.js'

// The first fenced block whose info string is `suggestion`: its lines replace the commented ones.
const SUGGESTION = /^```suggestion[^\n]*\n([\s\S]*?)^```[ \t]*$/m

/** The replacement lines of a comment's suggestion block, or null when it holds none. */
export function suggestionOf (body: string): string[] | null {
  const match = SUGGESTION.exec(body)
  if (match === null) return null
  return match[1] === '' ? [] : match[1].replace(/\n$/, '').split('\n')
}

/** The file's lines `from`..`to` (from 1, inclusive) replaced, its final newline (or its absence) kept. */
export function replaceLines (content: string, from: number, to: number, replacement: string[]): string {
  const endsWithNewline = content.endsWith('\n')
  const lines = (endsWithNewline ? content.slice(0, -1) : content).split('\n')
  lines.splice(from - 1, to - from + 1, ...replacement)
  const text = lines.join('\n')
  return endsWithNewline && text !== '' ? `${text}\n` : text
}

/**
 * Applies suggestions of inline comments to the source branch as one commit,
 * authored by the (first) suggester with the others as co-authors and
 * committed by whoever applies them. Written without a working tree (a
 * throw-away index file) and moved by compare-and-swap from the head the
 * comments were checked against.
 */
export class Suggestions {
  constructor (private readonly deps: { git: GitCli, clock: Clock, comments: Comments, mergeRequests: MergeRequests, protection: ProtectedBranches, signature: (userId: string) => Promise<Signature> }) {}

  async apply (repo: Repo, mr: Mr, actor: RepoActor, input: { commentIds: string[], message?: string }): Promise<{ commitSha: string, mr: Mr }> {
    const level = actorLevel(actor)
    if (level === null) throw commonErrors.forbidden({ permission: 'git.write' })
    if (mr.state !== 'open') throw gitErrors.mrNotOpen()
    if (!mr.sourceBranchExists) throw gitErrors.mrSourceMissing({ branch: mr.sourceBranch })
    await this.deps.protection.check(repo, mr.sourceBranch, level, 'create')
    await this.deps.comments.markOutdated(repo, mr)
    const edits = (await this.deps.comments.many(mr, input.commentIds)).map((comment) => this.edit(comment))
    const byFile = new Map<string, typeof edits>()
    for (const edit of edits) byFile.set(edit.position.path, [...(byFile.get(edit.position.path) ?? []), edit])
    const indexDir = await mkdtemp(join(tmpdir(), 'plinth-suggest-'))
    try {
      const env = { GIT_INDEX_FILE: join(indexDir, 'index') }
      await this.deps.git.run(repo.gitDir, ['read-tree', mr.headSha], { env })
      for (const [path, fileEdits] of byFile) {
        // Bottom-up, so the line numbers of the edits still to come stay true.
        const sorted = [...fileEdits].sort((a, b) => b.from - a.from)
        sorted.forEach((edit, index) => {
          const above = sorted[index + 1]
          if (above !== undefined && above.position.line >= edit.from) throw gitErrors.suggestionsOverlap({ path })
        })
        const [mode] = (await this.deps.git.run(repo.gitDir, ['ls-tree', mr.headSha, '--', path])).stdout.toString().split(' ')
        let content = (await this.deps.git.run(repo.gitDir, ['cat-file', 'blob', `${mr.headSha}:${path}`])).stdout.toString('utf8')
        for (const edit of sorted) content = replaceLines(content, edit.from, edit.position.line, edit.lines)
        const blob = (await this.deps.git.run(repo.gitDir, ['hash-object', '-w', '--stdin'], { input: content })).stdout.toString().trim()
        await this.deps.git.run(repo.gitDir, ['update-index', '--cacheinfo', `${mode},${blob},${path}`], { env })
      }
      const tree = (await this.deps.git.run(repo.gitDir, ['write-tree'], { env })).stdout.toString().trim()
      const commitSha = await this.commit(repo, mr, tree, edits.map((edit) => edit.authorId), actor.userId, input.message)
      await this.moveSource(repo, mr, commitSha)
      await this.deps.comments.markApplied(input.commentIds, commitSha)
      return { commitSha, mr: await this.deps.mergeRequests.get(repo, mr.iid) }
    } finally {
      await rm(indexDir, { recursive: true, force: true })
    }
  }

  private edit (comment: Comment): { position: PositionT, from: number, lines: string[], authorId: string } {
    const lines = suggestionOf(comment.body)
    if (comment.position === null || comment.position.side !== 'new' || lines === null) throw gitErrors.noSuggestion({ id: comment._id })
    if ((comment.appliedIn ?? null) !== null) throw gitErrors.suggestionApplied({ id: comment._id })
    if (comment.outdated) throw gitErrors.suggestionOutdated({ id: comment._id })
    return { position: comment.position, from: comment.position.startLine ?? comment.position.line, lines, authorId: comment.authorId }
  }

  private async commit (repo: Repo, mr: Mr, tree: string, authorIds: string[], committerId: string, message: string | undefined): Promise<string> {
    const suggesters = [...new Set(authorIds)]
    const [author, ...coAuthors] = await Promise.all(suggesters.map(async (userId) => await this.deps.signature(userId)))
    const committer = await this.deps.signature(committerId)
    const trailers = coAuthors.map((who) => `Co-authored-by: ${clean(who.name)} <${clean(who.email)}>`).join('\n')
    const text = `${message ?? `Apply ${authorIds.length === 1 ? 'a suggestion' : `${authorIds.length} suggestions`} from merge request !${mr.iid}`}${trailers === '' ? '' : `\n\n${trailers}`}\n`
    const date = `${Math.floor(this.deps.clock.nowMs() / 1000)} +0000`
    const env = {
      GIT_AUTHOR_NAME: clean(author.name),
      GIT_AUTHOR_EMAIL: clean(author.email),
      GIT_AUTHOR_DATE: date,
      GIT_COMMITTER_NAME: clean(committer.name),
      GIT_COMMITTER_EMAIL: clean(committer.email),
      GIT_COMMITTER_DATE: date
    }
    return (await this.deps.git.run(repo.gitDir, ['commit-tree', tree, '-p', mr.headSha, '-F', '-'], { input: text, env })).stdout.toString().trim()
  }

  private async moveSource (repo: Repo, mr: Mr, commitSha: string): Promise<void> {
    try {
      await this.deps.git.run(repo.gitDir, ['update-ref', '-m', `plinth: suggestions on !${mr.iid}`, `refs/heads/${mr.sourceBranch}`, commitSha, mr.headSha])
    } catch (error) {
      if (error instanceof GitCommandError) throw gitErrors.mrHeadChanged({ branch: mr.sourceBranch, expected: mr.headSha })
      throw error
    }
  }
}
