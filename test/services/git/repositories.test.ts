import t from 'tap'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { tempDir, tempStore } from '../../helper.js'
import { createIdGenerator } from '../../../services/platform/ids.js'
import { GitCli } from '../../../services/git/git-cli.js'
import { RepoReader } from '../../../services/git/reader.js'
import { Repositories } from '../../../services/git/repositories.js'

const clock = { now: () => new Date(1_700_000_000_000), nowMs: () => 1_700_000_000_000 }
const author = { userId: 'u1', name: 'Ada', email: 'ada@example.com' }

async function repositoriesIn (t: Parameters<typeof tempDir>[0], reposDir: string) {
  const repositories = new Repositories(await tempStore(t), {
    clock,
    newId: createIdGenerator(),
    git: new GitCli(),
    reader: new RepoReader(),
    reposDir,
    httpUrl: (projectId, slug) => `http://x/git/${projectId}/${slug}.git`,
    sshUrl: () => null
  })
  await repositories.init()
  return repositories
}

t.test('a repository whose bare repository cannot be made leaves no record behind', async (t) => {
  const blocked = join(tempDir(t), 'not-a-folder')
  writeFileSync(blocked, 'x')
  const repositories = await repositoriesIn(t, blocked)
  await t.rejects(repositories.create('proj1', author, { name: 'Site' }))
  t.equal(await repositories.find('proj1', 'site'), null)
})

t.test('the README commit is by its author, at the clock\'s time', async (t) => {
  const repositories = await repositoriesIn(t, tempDir(t))
  const repo = await repositories.create('proj1', author, { name: 'Site', readme: true, description: 'About' })
  const view = await repositories.view(repo)
  t.match(view, { slug: 'site', empty: false, cloneUrls: { http: 'http://x/git/proj1/site.git', ssh: null }, createdAt: '2023-11-14T22:13:20.000Z' })
  const head = await new RepoReader().commit(repo.gitDir, await new RepoReader().resolveCommit(repo.gitDir, 'main'))
  t.match(head, { title: 'Initial commit', author: { name: 'Ada', email: 'ada@example.com', date: '2023-11-14T22:13:20.000Z' } })
  t.throws(() => repositories.projectDir('../etc'), /unsafe project id/, 'ids that could leave the folder are refused')
  await repositories.deleteAllForProject('proj1')
  t.equal(await repositories.find('proj1', 'site'), null)
})

t.test('a change refused for its slug moves no HEAD', async (t) => {
  const repositories = await repositoriesIn(t, tempDir(t))
  await repositories.create('proj1', author, { name: 'Taken' })
  const repo = await repositories.create('proj1', author, { name: 'Site' })
  const git = new GitCli()
  const symbolicHead = async (): Promise<string> => (await git.run(repo.gitDir, ['symbolic-ref', 'HEAD'])).stdout.toString().trim()
  await t.rejects(repositories.update(repo, { slug: 'taken', defaultBranch: 'trunk' }), { status: 409, code: 'APP_GIT_SLUG_TAKEN' })
  t.equal(await symbolicHead(), 'refs/heads/main')
  t.equal((await repositories.find('proj1', 'site'))?.defaultBranch, 'main')
  const updated = await repositories.update(repo, { defaultBranch: 'trunk' })
  t.equal(updated.defaultBranch, 'trunk')
  t.equal(await symbolicHead(), 'refs/heads/trunk', 'an accepted change moves HEAD')
})
