import type { Clock } from '../platform/clock.js'
import { gitErrors } from './errors.js'
import { GitCommandError, type GitCli } from './git-cli.js'
import { ZERO_OID } from './names.js'

/** Who a commit or tag the server writes is by. */
export interface Signature { name: string, email: string }

/**
 * Every write to a repository goes through the git binary, with object ids
 * and validated names as arguments: init, objects, commits, tags, and refs
 * moved by compare-and-swap (`update-ref <ref> <new> <old>`), so a write that
 * raced a push fails instead of overwriting it.
 */
export class Writer {
  constructor (private readonly git: GitCli, private readonly clock: Clock) {}

  async initBare (gitDir: string, defaultBranch: string): Promise<void> {
    await this.git.run(null, ['init', '--quiet', '--bare', `--initial-branch=${defaultBranch}`, gitDir])
    // Every object pushed is checked; the pre-receive hook and fsck settings are also passed per push.
    for (const [key, value] of [['receive.fsckObjects', 'true'], ['core.logAllRefUpdates', 'true'], ['uploadpack.allowFilter', 'true'], ['repack.writeBitmaps', 'true']]) {
      await this.git.run(gitDir, ['config', key, value])
    }
  }

  async setHead (gitDir: string, branch: string): Promise<void> {
    await this.git.run(gitDir, ['symbolic-ref', 'HEAD', `refs/heads/${branch}`])
  }

  /** A first commit holding one file, on a branch that must not exist yet. */
  async initialCommit (gitDir: string, branch: string, readme: string, author: Signature): Promise<string> {
    const blob = (await this.git.run(gitDir, ['hash-object', '-w', '--stdin'], { input: readme })).stdout.toString().trim()
    const tree = (await this.git.run(gitDir, ['mktree'], { input: `100644 blob ${blob}\tREADME.md\n` })).stdout.toString().trim()
    const commit = (await this.git.run(gitDir, ['commit-tree', tree, '-F', '-'], { input: 'Initial commit\n', env: this.identity(author) })).stdout.toString().trim()
    await this.createRef(gitDir, `refs/heads/${branch}`, commit)
    return commit
  }

  /** Creates `ref` at `oid`; 409 when it exists already. */
  async createRef (gitDir: string, ref: string, oid: string): Promise<void> {
    await this.swap(gitDir, ['update-ref', '-m', 'plinth: create', ref, oid, ZERO_OID], ref, 'create')
  }

  /** Deletes `ref` if it still points at `expected`; 409 when it moved meanwhile. */
  async deleteRef (gitDir: string, ref: string, expected: string): Promise<void> {
    await this.swap(gitDir, ['update-ref', '-m', 'plinth: delete', '-d', ref, expected], ref, 'delete')
  }

  /** An annotated tag object for `target`, then its ref (409 if the tag exists). */
  async annotatedTag (gitDir: string, name: string, target: string, message: string, tagger: Signature): Promise<void> {
    const date = this.date()
    const body = `object ${target}\ntype commit\ntag ${name}\ntagger ${clean(tagger.name)} <${clean(tagger.email)}> ${date}\n\n${message.endsWith('\n') ? message : `${message}\n`}`
    const tag = (await this.git.run(gitDir, ['mktag'], { input: body })).stdout.toString().trim()
    await this.createRef(gitDir, `refs/tags/${name}`, tag)
  }

  private async swap (gitDir: string, args: string[], ref: string, change: 'create' | 'delete'): Promise<void> {
    try {
      await this.git.run(gitDir, args)
    } catch (error) {
      // update-ref exits 128 and names the ref when the old value does not hold; anything else is ours.
      if (error instanceof GitCommandError && /cannot lock ref|reference already exists|but expected|is at/.test(error.result.stderr)) throw gitErrors.refConflict({ ref, change })
      throw error
    }
  }

  private date (): string {
    return `${Math.floor(this.clock.nowMs() / 1000)} +0000`
  }

  private identity (who: Signature): Record<string, string> {
    const date = this.date()
    return {
      GIT_AUTHOR_NAME: clean(who.name),
      GIT_AUTHOR_EMAIL: clean(who.email),
      GIT_AUTHOR_DATE: date,
      GIT_COMMITTER_NAME: clean(who.name),
      GIT_COMMITTER_EMAIL: clean(who.email),
      GIT_COMMITTER_DATE: date
    }
  }
}

/** Names and emails go into object headers: no angle brackets or line breaks, which would forge other fields. */
export function clean (value: string): string {
  const cleaned = value.replace(/[<>\x00-\x1f\x7f]/g, '').trim()
  return cleaned === '' ? 'unknown' : cleaned
}
