import t from 'tap'
import { execFileSync } from 'node:child_process'
import { once } from 'node:events'
import { tempDir } from '../../helper.js'
import { GitCli } from '../../../services/git/git-cli.js'
import { RepoReader } from '../../../services/git/reader.js'
import { History } from '../../../services/git/history.js'
import type { Repo } from '../../../services/git/repositories.js'

/** A bare repository with one commit holding `big.bin` (4 MB, more than a pipe holds) on main. */
async function repositoryWithBigFile (t: Parameters<typeof tempDir>[0]): Promise<Repo> {
  const git = new GitCli()
  const gitDir = tempDir(t)
  await git.run(null, ['init', '--quiet', '--bare', '--initial-branch=main', gitDir])
  const blob = (await git.run(gitDir, ['hash-object', '-w', '--stdin'], { input: Buffer.alloc(4 * 1024 * 1024, 'x') })).stdout.toString().trim()
  const tree = (await git.run(gitDir, ['mktree'], { input: `100644 blob ${blob}\tbig.bin\n` })).stdout.toString().trim()
  const env = { GIT_AUTHOR_NAME: 'A', GIT_AUTHOR_EMAIL: 'a@example.com', GIT_COMMITTER_NAME: 'A', GIT_COMMITTER_EMAIL: 'a@example.com' }
  const commit = (await git.run(gitDir, ['commit-tree', tree, '-m', 'big'], { env })).stdout.toString().trim()
  await git.run(gitDir, ['update-ref', 'refs/heads/main', commit])
  return { gitDir, defaultBranch: 'main' } as unknown as Repo
}

const catFilesRunning = (gitDir: string): number => {
  try {
    return execFileSync('pgrep', ['-f', `git-dir=${gitDir} cat-file blob`]).toString().split('\n').filter((line) => line !== '').length
  } catch {
    return 0
  }
}

t.test('a download dropped before its first read leaves no git behind', async (t) => {
  const repo = await repositoryWithBigFile(t)
  const history = new History({ reader: new RepoReader(), git: new GitCli() })
  const opened = await history.openBlob(repo, { path: 'big.bin' })
  t.equal(opened.size, 4 * 1024 * 1024)
  t.equal(catFilesRunning(repo.gitDir), 1, 'git streams the blob')
  opened.stream.destroy()
  await once(opened.stream, 'close')
  for (let i = 0; i < 50 && catFilesRunning(repo.gitDir) > 0; i++) await new Promise((resolve) => setTimeout(resolve, 20))
  t.equal(catFilesRunning(repo.gitDir), 0, 'and is stopped with the stream')
})

t.test('history pages come from git, however deep the cursor', async (t) => {
  const repo = await repositoryWithBigFile(t)
  const history = new History({ reader: new RepoReader(), git: new GitCli() })
  const first = await history.log(repo, { limit: 1 })
  t.equal(first.items.length, 1)
  t.equal(first.nextCursor, null)
  const far = await history.log(repo, { cursor: `${first.items[0].sha}.9999999` })
  t.same(far, { items: [], nextCursor: null }, 'a skip past the history is an empty page')
  await t.rejects(history.log(repo, { cursor: 'nope' }), { status: 400, code: 'APP_INVALID_CURSOR' })
})
