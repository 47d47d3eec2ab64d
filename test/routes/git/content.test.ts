import t from 'tap'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { call } from '../../helper.js'
import { gitClient, gitWorld } from './fixtures.js'

const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.alloc(64, 0)])

t.test('history, commits, diffs, trees and blobs', async (t) => {
  const world = await gitWorld(t)
  const git = gitClient(t)
  const { app, api, viewer } = world
  const repoApi = `${api}/repositories/repo`
  await world.createRepo({ name: 'Repo' })
  const dir = await git.workTree('work', [
    { 'README.md': '# repo\n', 'src/a.txt': 'a\nb\nc\n' },
    { 'docs/guide.md': 'guide\n' },
    { 'src/a.txt': 'a\nB\nc\nd\n' },
    { 'docs/guide.md': 'guide v2\n' },
    { 'big.txt': 'x'.repeat(1024 * 1024 + 1) }
  ])
  writeFileSync(join(dir, 'logo.png'), PNG)
  await git.run(['mv', 'src/a.txt', 'src/renamed.txt'], { cwd: dir })
  await git.run(['add', '-A'], { cwd: dir })
  // A submodule: a gitlink entry in the tree, pointing at a commit of another repository.
  await git.run(['update-index', '--add', '--cacheinfo', `160000,${'5'.repeat(40)},a-module`], { cwd: dir })
  await git.run(['commit', '-q', '-m', 'Rename and add a logo\n\nWith a body.'], { cwd: dir })
  t.equal((await git.run(['push', world.url('repo', await world.pat(world.owner.auth)), 'main'], { cwd: dir })).code, 0)

  const first = await call(app, 'GET', `${repoApi}/commits?limit=4`, viewer.auth)
  t.same(first.body.data.items.map((commit: { title: string }) => commit.title), ['Rename and add a logo', 'commit 5', 'commit 4', 'commit 3'])
  const head = first.body.data.items[0]
  t.match(head, { message: 'Rename and add a logo\n\nWith a body.\n', author: { name: 'Tester', email: 'tester@example.com' } })
  const second = await call(app, 'GET', `${repoApi}/commits?limit=4&cursor=${first.body.data.nextCursor as string}`, viewer.auth)
  t.same(second.body.data.items.map((commit: { title: string }) => commit.title), ['commit 2', 'commit 1'])
  t.equal(second.body.data.nextCursor, null)
  const docs = await call(app, 'GET', `${repoApi}/commits?path=docs`, viewer.auth)
  t.same(docs.body.data.items.map((commit: { title: string }) => commit.title), ['commit 4', 'commit 2'], 'only commits touching the path')
  const older = await call(app, 'GET', `${repoApi}/commits?ref=${head.parents[0] as string}&limit=1`, viewer.auth)
  t.equal(older.body.data.items[0].title, 'commit 5')

  const one = await call(app, 'GET', `${repoApi}/commits/${(head.sha as string).slice(0, 8)}`, viewer.auth)
  t.same(one.body.data, head)
  const diff = await call(app, 'GET', `${repoApi}/commits/${head.sha as string}/diff`, viewer.auth)
  t.equal(diff.body.data.base, head.parents[0])
  t.same(diff.body.data.stats, { files: 3, additions: 1, deletions: 0 })
  t.match(diff.body.data.files, [
    { path: 'a-module', status: 'added' },
    { path: 'logo.png', oldPath: null, status: 'added', binary: true, patch: null },
    { path: 'src/renamed.txt', oldPath: 'src/a.txt', status: 'renamed', binary: false }
  ])
  const change = await call(app, 'GET', `${repoApi}/commits/${older.body.data.items[0].parents[0] as string}/diff`, viewer.auth)
  t.match(change.body.data.files, [{ path: 'docs/guide.md', status: 'modified', additions: 1, deletions: 1, patch: /-guide\n\+guide v2/ }])
  const root = (await call(app, 'GET', `${repoApi}/commits`, viewer.auth)).body.data.items.at(-1)
  const rootDiff = await call(app, 'GET', `${repoApi}/commits/${root.sha as string}/diff`, viewer.auth)
  t.match(rootDiff.body.data, { base: null, stats: { files: 2, additions: 4, deletions: 0 }, truncated: false })
  const raw = await app.inject({ url: `${repoApi}/commits/${root.sha as string}/diff.raw`, headers: viewer.auth })
  t.equal(raw.headers['content-type'], 'text/plain; charset=utf-8')
  t.match(raw.body, /^diff --git a\/README.md b\/README.md\nnew file mode 100644/)

  const tree = await call(app, 'GET', `${repoApi}/tree`, viewer.auth)
  t.same(tree.body.data.entries.map((entry: { name: string, type: string }) => `${entry.type}:${entry.name}`), ['tree:docs', 'tree:src', 'blob:README.md', 'commit:a-module', 'blob:big.txt', 'blob:logo.png'])
  const sub = await call(app, 'GET', `${repoApi}/tree?path=src&ref=${root.sha as string}`, viewer.auth)
  t.match(sub.body.data, { commit: root.sha, path: 'src', entries: [{ name: 'a.txt', path: 'src/a.txt', type: 'blob', mode: '100644' }] })

  const text = await call(app, 'GET', `${repoApi}/blob?path=src/renamed.txt`, viewer.auth)
  t.match(text.body.data, { path: 'src/renamed.txt', size: 8, binary: false, encoding: 'utf8', content: 'a\nB\nc\nd\n' })
  const image = await call(app, 'GET', `${repoApi}/blob?path=logo.png`, viewer.auth)
  t.match(image.body.data, { binary: true, encoding: 'base64', content: PNG.toString('base64') })
  const big = await call(app, 'GET', `${repoApi}/blob?path=big.txt`, viewer.auth)
  t.match(big.body.data, { size: 1024 * 1024 + 1, encoding: null, content: null }, 'too big to come inline')

  const png = await app.inject({ url: `${repoApi}/raw?path=logo.png`, headers: viewer.auth })
  t.equal(png.headers['content-type'], 'image/png')
  t.same(png.rawPayload, PNG)
  const plain = await app.inject({ url: `${repoApi}/raw?path=README.md&ref=main`, headers: viewer.auth })
  t.equal(plain.headers['content-type'], 'text/plain; charset=utf-8')
  t.equal(plain.headers['x-content-type-options'], 'nosniff')
  t.equal(plain.body, '# repo\n')

  const cases: Array<[string, string, Record<string, string>, number, string]> = [
    ['an outsider', `${repoApi}/commits`, world.outsider.auth, 404, 'APP_PROJECT_NOT_FOUND'],
    ['an unknown ref', `${repoApi}/commits?ref=nope`, viewer.auth, 404, 'APP_GIT_REF_NOT_FOUND'],
    ['an unknown commit', `${repoApi}/commits/${'0'.repeat(40)}`, viewer.auth, 404, 'APP_GIT_REF_NOT_FOUND'],
    ['a ref like an option', `${repoApi}/tree?ref=--output=x`, viewer.auth, 400, 'APP_GIT_INVALID_REF'],
    ['a bad cursor', `${repoApi}/commits?cursor=abc`, viewer.auth, 400, 'APP_VALIDATION_FAILED'],
    ['a cursor from nowhere', `${repoApi}/commits?cursor=${'1'.repeat(40)}.4`, viewer.auth, 400, 'APP_INVALID_CURSOR'],
    ['a path going up', `${repoApi}/tree?path=../..`, viewer.auth, 400, 'APP_GIT_INVALID_PATH'],
    ['a missing folder', `${repoApi}/tree?path=nope`, viewer.auth, 404, 'APP_GIT_PATH_NOT_FOUND'],
    ['a file as a folder', `${repoApi}/tree?path=README.md`, viewer.auth, 400, 'APP_GIT_NOT_A_FOLDER'],
    ['a folder as a file', `${repoApi}/blob?path=src`, viewer.auth, 400, 'APP_GIT_NOT_A_FILE'],
    ['a submodule as a file', `${repoApi}/raw?path=a-module`, viewer.auth, 400, 'APP_GIT_NOT_A_FILE'],
    ['a missing file', `${repoApi}/raw?path=src/nope.txt`, viewer.auth, 404, 'APP_GIT_PATH_NOT_FOUND'],
    ['a file under a file', `${repoApi}/blob?path=README.md/x`, viewer.auth, 404, 'APP_GIT_PATH_NOT_FOUND'],
    ['a blob without a path', `${repoApi}/blob`, viewer.auth, 400, 'APP_VALIDATION_FAILED']
  ]
  for (const [name, url, headers, status, code] of cases) {
    const res = await call(app, 'GET', url, headers)
    t.equal(res.status, status, name)
    t.equal(res.body.code, code, name)
  }
  const tagTarget = await call(app, 'POST', `${repoApi}/tags`, world.owner.auth, { name: 'tree-tag', target: `${tree.body.data.commit as string}` })
  t.equal(tagTarget.status, 201)
})

t.test('an empty repository has no history yet', async (t) => {
  const world = await gitWorld(t)
  await world.createRepo({ name: 'Empty' })
  const res = await call(world.app, 'GET', `${world.api}/repositories/empty/commits`, world.owner.auth)
  t.equal(res.status, 404)
  t.equal(res.body.code, 'APP_GIT_REF_NOT_FOUND')
  t.same((await call(world.app, 'GET', `${world.api}/repositories/empty/branches`, world.owner.auth)).body.data, [])
})
