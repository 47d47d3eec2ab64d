import t from 'tap'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { call } from '../../helper.js'
import { gitClient, gitWorld } from './fixtures.js'

t.test('tree, blob and raw reads see every push, a repack, and a repository deleted and made again', async (t) => {
  const world = await gitWorld(t)
  const git = gitClient(t)
  const { app, api, viewer } = world
  const repoApi = `${api}/repositories/repo`
  const token = await world.pat(world.owner.auth)
  const serverGit = async (args: string[]): Promise<void> => {
    const gitDir = (await app.git.repositories.get(world.projectId, 'repo')).gitDir
    t.equal((await git.run(['--git-dir', gitDir, ...args])).code, 0, `git ${args.join(' ')}`)
  }
  const read = async () => ({
    tree: (await call(app, 'GET', `${repoApi}/tree`, viewer.auth)).body.data.entries.map((entry: { name: string }) => entry.name),
    blob: (await call(app, 'GET', `${repoApi}/blob?path=a.txt`, viewer.auth)).body.data,
    raw: (await app.inject({ url: `${repoApi}/raw?path=a.txt`, headers: viewer.auth })).body
  })
  const commitAndPush = async (dir: string, files: Record<string, string>): Promise<void> => {
    for (const [name, content] of Object.entries(files)) writeFileSync(join(dir, name), content)
    await git.run(['add', '-A'], { cwd: dir })
    await git.run(['commit', '-q', '-m', Object.keys(files).join(' ')], { cwd: dir })
    t.equal((await git.run(['push', '-q', world.url('repo', token), 'main'], { cwd: dir })).code, 0)
  }

  await world.createRepo({ name: 'Repo' })
  const dir = await git.workTree('work', [{ 'a.txt': 'one\n' }, { 'a.txt': 'two\n' }])
  t.equal((await git.run(['push', '-q', world.url('repo', token), 'main'], { cwd: dir })).code, 0)
  await serverGit(['repack', '-a', '-d', '-q'])
  t.match(await read(), { tree: ['a.txt'], blob: { size: 4, content: 'two\n' }, raw: 'two\n' }, 'all packed')

  await commitAndPush(dir, { 'a.txt': 'three!\n' })
  t.match(await read(), { tree: ['a.txt'], blob: { size: 7, content: 'three!\n' }, raw: 'three!\n' }, 'a push kept loose beside the pack')

  // Every push from here on is kept as a pack of its own, beside the first.
  await serverGit(['config', 'receive.unpackLimit', '1'])
  await commitAndPush(dir, { 'a.txt': 'four\n', 'b.txt': 'b\n' })
  t.match(await read(), { tree: ['a.txt', 'b.txt'], blob: { size: 5, content: 'four\n' }, raw: 'four\n' }, 'a push that brought a pack')

  await serverGit(['repack', '-a', '-d', '-q'])
  t.match(await read(), { tree: ['a.txt', 'b.txt'], blob: { size: 5, content: 'four\n' }, raw: 'four\n' }, 'after a repack')

  t.equal((await call(app, 'DELETE', repoApi, world.owner.auth)).status, 200)
  await world.createRepo({ name: 'Repo' })
  const again = await git.workTree('again', [{ 'a.txt': 'another repository\n', 'c.txt': 'c\n' }])
  t.equal((await git.run(['push', '-q', world.url('repo', token), 'main'], { cwd: again })).code, 0)
  await serverGit(['repack', '-a', '-d', '-q'])
  t.match(await read(), { tree: ['a.txt', 'c.txt'], blob: { size: 19, content: 'another repository\n' }, raw: 'another repository\n' }, 'the same slug made again')
  t.equal((await call(app, 'GET', `${repoApi}/blob?path=b.txt`, viewer.auth)).body.code, 'APP_GIT_PATH_NOT_FOUND')
})
