import t from 'tap'
import { join } from 'node:path'
import { call } from '../../helper.js'
import { gitClient, gitWorld } from './fixtures.js'

const world = await gitWorld(t)
const { app, api, owner, member } = world

t.test('protected-tag rules: create, change, delete, who may', async (t) => {
  await world.createRepo({ name: 'Rules' })
  const rulesApi = `${api}/repositories/rules/protected-tags`
  const created = await call(app, 'POST', rulesApi, owner.auth, { pattern: 'v*' })
  t.equal(created.status, 201)
  t.equal(created.headers.location, `${rulesApi}/${created.body.data.id as string}`)
  t.match(created.body.data, { pattern: 'v*', create: 'admin', update: 'nobody', delete: 'nobody' }, 'by default: admins create, nobody moves or deletes')
  const id = created.body.data.id as string
  const changed = await call(app, 'PUT', `${rulesApi}/${id}`, owner.auth, { pattern: 'release/**', delete: 'admin' })
  t.match(changed.body.data, { pattern: 'release/**', create: 'admin', update: 'nobody', delete: 'admin' })
  const partial = await call(app, 'PUT', `${rulesApi}/${id}`, owner.auth, { create: 'write' })
  t.match(partial.body.data, { pattern: 'release/**', create: 'write', update: 'nobody', delete: 'admin' }, 'a change leaves what it does not name')
  t.same((await call(app, 'GET', rulesApi, world.viewer.auth)).body.data, [partial.body.data])
  await call(app, 'POST', rulesApi, owner.auth, { pattern: 'v*' })

  const cases: Array<[string, 'GET' | 'POST' | 'PUT' | 'DELETE', string, Record<string, string>, unknown, number, string]> = [
    ['no credential', 'GET', rulesApi, {}, undefined, 401, 'APP_UNAUTHORIZED'],
    ['an outsider lists', 'GET', rulesApi, world.outsider.auth, undefined, 404, 'APP_PROJECT_NOT_FOUND'],
    ['a writer adds', 'POST', rulesApi, member.auth, { pattern: 'x' }, 403, 'APP_FORBIDDEN'],
    ['a bad pattern', 'POST', rulesApi, owner.auth, { pattern: 'v..*' }, 400, 'APP_GIT_INVALID_TAG_PATTERN'],
    ['an option as pattern', 'POST', rulesApi, owner.auth, { pattern: '-v' }, 400, 'APP_GIT_INVALID_TAG_PATTERN'],
    ['an unknown level', 'POST', rulesApi, owner.auth, { pattern: 'x', create: 'everyone' }, 400, 'APP_VALIDATION_FAILED'],
    ['an unknown field', 'POST', rulesApi, owner.auth, { pattern: 'x', push: 'admin' }, 400, 'APP_VALIDATION_FAILED'],
    ['a pattern twice', 'POST', rulesApi, owner.auth, { pattern: 'v*' }, 409, 'APP_GIT_RULE_EXISTS'],
    ['renamed onto another', 'PUT', `${rulesApi}/${id}`, owner.auth, { pattern: 'v*' }, 409, 'APP_GIT_RULE_EXISTS'],
    ['a bad pattern on change', 'PUT', `${rulesApi}/${id}`, owner.auth, { pattern: 'a b' }, 400, 'APP_GIT_INVALID_TAG_PATTERN'],
    ['an empty change', 'PUT', `${rulesApi}/${id}`, owner.auth, {}, 400, 'APP_VALIDATION_FAILED'],
    ['an unknown rule', 'PUT', `${rulesApi}/nope`, owner.auth, { delete: 'nobody' }, 404, 'APP_GIT_RULE_NOT_FOUND'],
    ['delete an unknown rule', 'DELETE', `${rulesApi}/nope`, owner.auth, undefined, 404, 'APP_GIT_RULE_NOT_FOUND']
  ]
  for (const [name, method, url, headers, body, status, code] of cases) {
    const res = await call(app, method, url, headers, body)
    t.equal(res.status, status, name)
    t.equal(res.body.code, code, name)
    if (code === 'APP_FORBIDDEN') t.equal(res.body.details.permission, 'git.admin', `${name}: names the permission`)
  }
  t.equal((await call(app, 'DELETE', `${rulesApi}/${id}`, owner.auth)).status, 200)
  t.same((await call(app, 'GET', rulesApi, owner.auth)).body.data.map((rule: { pattern: string }) => rule.pattern), ['v*'])
  t.equal((await call(app, 'DELETE', `${api}/repositories/rules`, owner.auth)).status, 200)
  t.equal(await app.store.collection('git_protected_tags').countDocuments({}), 0, 'a deleted repository takes its tag rules along')
})

t.test('tag rules hold inside git on every push and in the tag routes', async (t) => {
  const git = gitClient(t)
  await world.createRepo({ name: 'Tags', readme: true })
  const tagsApi = `${api}/repositories/tags/tags`
  const writer = await world.pat(member.auth)
  const admin = await world.pat(owner.auth)
  await git.run(['clone', '-q', world.url('tags', writer), 'work'])
  const work = join(git.home, 'work')
  await call(app, 'POST', `${api}/repositories/tags/protected-tags`, owner.auth, { pattern: 'v*' })

  const created = await git.run(['push', 'origin', 'HEAD:refs/tags/v1.0'], { cwd: work })
  t.not(created.code, 0)
  t.match(created.stderr, /tag v1\.0: protected by "v\*"; you may not create it/, 'a writer may not create a release tag')
  t.equal((await git.run(['push', 'origin', 'HEAD:refs/tags/build-1'], { cwd: work })).code, 0, 'tags no rule matches are a writer\'s to push')
  t.equal((await git.run(['push', world.url('tags', admin), 'HEAD:refs/tags/v1.0'], { cwd: work })).code, 0, 'an admin creates it')

  await git.run(['commit', '-q', '--allow-empty', '-m', 'next'], { cwd: work })
  const moved = await git.run(['push', '--force', world.url('tags', admin), 'HEAD:refs/tags/v1.0'], { cwd: work })
  t.not(moved.code, 0)
  t.match(moved.stderr, /tag v1\.0: protected by "v\*"; you may not move it/, 'nobody moves it, not even an admin')
  const deleted = await git.run(['push', world.url('tags', admin), '--delete', 'refs/tags/v1.0'], { cwd: work })
  t.match(deleted.stderr, /you may not delete it/, 'nor deletes it')
  t.equal((await git.run(['ls-remote', '--tags', 'origin', 'v1.0'], { cwd: work })).stdout.trim().split('\t')[0], (await git.run(['rev-parse', 'HEAD~1'], { cwd: work })).stdout.trim(), 'the tag stays where it was pushed')

  const cases: Array<[string, 'POST' | 'DELETE', string, Record<string, string>, unknown, number, string | null]> = [
    ['a writer creates one', 'POST', tagsApi, member.auth, { name: 'v2.0' }, 403, 'APP_GIT_TAG_PROTECTED'],
    ['a viewer creates one', 'POST', tagsApi, world.viewer.auth, { name: 'x1' }, 403, 'APP_FORBIDDEN'],
    ['an admin deletes one', 'DELETE', `${tagsApi}?name=v1.0`, owner.auth, undefined, 403, 'APP_GIT_TAG_PROTECTED'],
    ['an admin creates one', 'POST', tagsApi, owner.auth, { name: 'v2.0', message: 'Release 2.0' }, 201, null],
    ['a writer deletes an unprotected one', 'DELETE', `${tagsApi}?name=build-1`, member.auth, undefined, 200, null]
  ]
  for (const [name, method, url, headers, body, status, code] of cases) {
    const res = await call(app, method, url, headers, body)
    t.equal(res.status, status, name)
    if (code !== null) t.equal(res.body.code, code, name)
  }
  const repo = await app.git.repositories.get(world.projectId, 'tags')
  t.equal((await git.run(['--git-dir', repo.gitDir, 'fsck', '--strict', '--no-progress'])).code, 0)
})
