import { Readable } from 'node:stream'
import { commonErrors } from '../platform/errors.js'
import { gitErrors } from './errors.js'
import { sniffType, SNIFF_BYTES } from '../files/sniff.js'
import { GIT_LIMITS, type BlobT, type CommitDiffT, type CommitT, type TreeT } from '../../schemas/git.js'
import type { GitCli } from './git-cli.js'
import { checkRevision, checkTreePath } from './names.js'
import { attachPatches, parseDiffTree } from './diff.js'
import type { RepoReader } from './reader.js'
import type { Repo } from './repositories.js'

/** A blob opened for download: its size, its sniffed type and its bytes as they come out of git. */
export interface OpenedBlob { name: string, size: number, type: string, stream: Readable }

const RAW_DIFF_MAX = 16 * 1024 * 1024
// git's own test for binary content: a NUL in the first 8000 bytes.
const BINARY_PROBE = 8000

function isBinary (content: Buffer): boolean {
  return content.subarray(0, BINARY_PROBE).includes(0)
}

function parseCursor (cursor: string | undefined): { start: string, skip: number } | null {
  if (cursor === undefined) return null
  const match = /^([0-9a-f]{40})\.(\d{1,7})$/.exec(cursor)
  if (match === null) throw commonErrors.invalidCursor()
  return { start: match[1], skip: Number(match[2]) }
}

/**
 * Reading a repository's content: history, one commit, its diff, trees and
 * blobs at any revision. isomorphic-git reads; the git binary computes diffs
 * (rename detection, unified patches) and streams big blobs.
 */
export class History {
  constructor (private readonly deps: { reader: RepoReader, git: GitCli }) {}

  private async commitAt (repo: Repo, ref: string | undefined, path: string): Promise<string> {
    return await this.deps.reader.resolveCommit(repo.gitDir, checkRevision(ref ?? repo.defaultBranch, path))
  }

  /**
   * A page of history. The cursor pins the commit the first page started at
   * and counts how far in the next page begins, so pushes made while paging
   * do not shift the pages.
   */
  async log (repo: Repo, query: { ref?: string, path?: string, limit?: number, cursor?: string }): Promise<{ items: CommitT[], nextCursor: string | null }> {
    const path = checkTreePath(query.path ?? '', 'query.path')
    const limit = query.limit ?? GIT_LIMITS.logPageDefault
    const cursor = parseCursor(query.cursor)
    const start = cursor === null
      ? await this.commitAt(repo, query.ref, 'query.ref')
      : await this.deps.reader.resolveCommit(repo.gitDir, cursor.start).catch(() => { throw commonErrors.invalidCursor() })
    const skip = cursor?.skip ?? 0
    // git walks the history out of process, in native time however deep the page; the page itself is read from disk here.
    const listed = await this.deps.git.run(repo.gitDir, ['rev-list', `--skip=${skip}`, `--max-count=${limit + 1}`, start, '--', ...(path === '' ? [] : [path])])
    const oids = listed.stdout.toString().split('\n').filter((line) => line !== '')
    const items = await Promise.all(oids.slice(0, limit).map(async (oid) => await this.deps.reader.commit(repo.gitDir, oid)))
    return { items, nextCursor: oids.length > limit ? `${start}.${skip + limit}` : null }
  }

  async commit (repo: Repo, sha: string): Promise<CommitT> {
    return await this.deps.reader.commit(repo.gitDir, await this.commitAt(repo, sha, 'params.sha'))
  }

  /** The commit's changes against its first parent, file by file, with stats and patches up to the limit. */
  async diff (repo: Repo, sha: string): Promise<CommitDiffT> {
    const commit = await this.commit(repo, sha)
    const base = commit.parents[0] ?? null
    const range = base === null ? ['--root', commit.sha] : [base, commit.sha]
    const { stdout } = await this.deps.git.run(repo.gitDir, ['diff-tree', '-r', '-M', '-z', '--raw', '--numstat', '--no-commit-id', ...range])
    const all = parseDiffTree(stdout)
    const files = all.slice(0, GIT_LIMITS.diffFilesMax)
    let truncated = files.length < all.length
    const patch = await this.rawDiff(repo, commit.sha, base).catch((error: unknown) => {
      if (gitErrors.outputTooLarge.is(error)) return null
      throw error
    })
    truncated = (patch === null ? true : attachPatches(files, patch)) || truncated
    const stats = all.reduce((sum, file) => ({ files: sum.files + 1, additions: sum.additions + file.additions, deletions: sum.deletions + file.deletions }), { files: 0, additions: 0, deletions: 0 })
    return { sha: commit.sha, base, files, stats, truncated }
  }

  /** The unified diff as git prints it. */
  async rawCommitDiff (repo: Repo, sha: string): Promise<string> {
    const commit = await this.commit(repo, sha)
    return await this.rawDiff(repo, commit.sha, commit.parents[0] ?? null)
  }

  private async rawDiff (repo: Repo, sha: string, base: string | null): Promise<string> {
    const range = base === null ? ['--root', sha] : [base, sha]
    const { stdout } = await this.deps.git.run(repo.gitDir, ['diff-tree', '-r', '-M', '-p', '--no-commit-id', ...range], { maxOutput: RAW_DIFF_MAX })
    return stdout.toString('utf8')
  }

  async tree (repo: Repo, query: { ref?: string, path?: string }): Promise<TreeT> {
    const path = checkTreePath(query.path ?? '', 'query.path')
    return await this.deps.reader.tree(repo.gitDir, await this.commitAt(repo, query.ref, 'query.ref'), path)
  }

  async blob (repo: Repo, query: { ref?: string, path: string }): Promise<BlobT> {
    const path = checkTreePath(query.path, 'query.path')
    const commit = await this.commitAt(repo, query.ref, 'query.ref')
    const oid = await this.deps.reader.blobId(repo.gitDir, commit, path)
    const size = await this.deps.reader.objectSize(repo.gitDir, oid)
    // isomorphic-git reads a blob whole, so only blobs small enough to send inline are read here.
    if (size > GIT_LIMITS.inlineBlobBytes) return { commit, path, oid, size, binary: false, encoding: null, content: null }
    const content = await this.deps.reader.blobContent(repo.gitDir, oid)
    const binary = isBinary(content)
    return { commit, path, oid, size, binary, encoding: binary ? 'base64' : 'utf8', content: content.toString(binary ? 'base64' : 'utf8') }
  }

  /** Streams a blob out of `git cat-file`, however big, with a type sniffed from its first bytes. */
  async openBlob (repo: Repo, query: { ref?: string, path: string }): Promise<OpenedBlob> {
    const path = checkTreePath(query.path, 'query.path')
    const oid = await this.deps.reader.blobId(repo.gitDir, await this.commitAt(repo, query.ref, 'query.ref'), path)
    const size = await this.deps.reader.objectSize(repo.gitDir, oid)
    const child = this.deps.git.spawn(repo.gitDir, ['cat-file', 'blob', oid])
    const chunks = child.stdout[Symbol.asyncIterator]()
    const head: Buffer[] = []
    let headSize = 0
    let ended = false
    while (headSize < Math.min(SNIFF_BYTES, size)) {
      const next = await chunks.next()
      if (next.done === true) { ended = true; break }
      head.push(next.value as Buffer)
      headSize += (next.value as Buffer).length
    }
    const first = Buffer.concat(head)
    const sniffed = sniffType(first, { complete: size <= first.length })
    async function * bytes (): AsyncGenerator<Buffer> {
      try {
        yield first
        if (!ended) for await (const chunk of { [Symbol.asyncIterator]: () => chunks }) yield chunk as Buffer
      } finally {
        // A client that goes away mid-download leaves nothing running.
        if (child.exitCode === null) child.kill()
      }
    }
    const stream = Readable.from(bytes(), { objectMode: false })
    // A stream destroyed before its first read never enters the generator, so its finally cannot be the only stop.
    stream.once('close', () => { if (child.exitCode === null) child.kill() })
    return { name: path.slice(path.lastIndexOf('/') + 1), size, type: sniffed === 'text/plain' ? 'text/plain; charset=utf-8' : sniffed, stream }
  }
}
