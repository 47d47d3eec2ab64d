import t from 'tap'
import { existsSync } from 'node:fs'
import { call } from '../../helper.js'
import { gitWorld } from './fixtures.js'

t.test('repositories: create, list, get, update, delete', async (t) => {
  const world = await gitWorld(t)
  const { app, api, owner } = world
  const created = await world.createRepo({ name: 'My Site', description: 'The site', readme: true })
  t.equal(created.status, 201)
  t.equal(created.headers.location, `${api}/repositories/my-site`)
  t.match(created.body.data, { slug: 'my-site', name: 'My Site', defaultBranch: 'main', visibility: 'private', empty: false, cloneUrls: { ssh: null } })
  const readme = await call(app, 'GET', `${api}/repositories/my-site/blob?path=README.md`, owner.auth)
  t.equal(readme.body.data.content, '# My Site\n\nThe site\n')
  const log = await call(app, 'GET', `${api}/repositories/my-site/commits`, owner.auth)
  t.match(log.body.data.items, [{ title: 'Initial commit', author: { name: 'owner', email: 'owner@example.com' } }])

  const empty = await world.createRepo({ name: 'Tools', slug: 'tools.v2', defaultBranch: 'trunk' })
  t.match(empty.body.data, { slug: 'tools.v2', defaultBranch: 'trunk', empty: true })
  const list = await call(app, 'GET', `${api}/repositories`, world.viewer.auth)
  t.same(list.body.data.map((repo: { slug: string }) => repo.slug), ['my-site', 'tools.v2'])

  const renamed = await call(app, 'PUT', `${api}/repositories/tools.v2`, owner.auth, { slug: 'tools', name: 'Tools!', visibility: 'public', defaultBranch: 'dev' })
  t.equal(renamed.status, 200)
  t.match(renamed.body.data, { slug: 'tools', name: 'Tools!', visibility: 'public', defaultBranch: 'dev' })
  t.equal((await call(app, 'GET', `${api}/repositories/tools.v2`, owner.auth)).status, 404)

  const repo = await app.git.repositories.get(world.projectId, 'tools')
  const deleted = await call(app, 'DELETE', `${api}/repositories/tools`, owner.auth)
  t.same(deleted.body.data, { id: repo._id, deleted: true })
  t.notOk(existsSync(repo.gitDir), 'the bare repository is gone from disk')
})

t.test('refusals, each with its status and code', async (t) => {
  const world = await gitWorld(t)
  const { app, api, owner, member, viewer, outsider } = world
  await world.createRepo({ name: 'Repo', readme: true })
  const cases: Array<[string, 'GET' | 'POST' | 'PUT' | 'DELETE', string, Record<string, string>, unknown, number, string]> = [
    ['no credential', 'GET', `${api}/repositories`, {}, undefined, 401, 'APP_UNAUTHORIZED'],
    ['an outsider lists', 'GET', `${api}/repositories`, outsider.auth, undefined, 404, 'APP_PROJECT_NOT_FOUND'],
    ['an outsider reads one', 'GET', `${api}/repositories/repo`, outsider.auth, undefined, 404, 'APP_PROJECT_NOT_FOUND'],
    ['a member creates', 'POST', `${api}/repositories`, member.auth, { name: 'x' }, 403, 'APP_FORBIDDEN'],
    ['a viewer updates', 'PUT', `${api}/repositories/repo`, viewer.auth, { name: 'x' }, 403, 'APP_FORBIDDEN'],
    ['a member deletes', 'DELETE', `${api}/repositories/repo`, member.auth, undefined, 403, 'APP_FORBIDDEN'],
    ['an unknown repository', 'GET', `${api}/repositories/nope`, owner.auth, undefined, 404, 'APP_GIT_REPOSITORY_NOT_FOUND'],
    ['a taken slug', 'POST', `${api}/repositories`, owner.auth, { name: 'Repo' }, 409, 'APP_GIT_SLUG_TAKEN'],
    ['a slug ending in .git', 'POST', `${api}/repositories`, owner.auth, { name: 'x', slug: 'x.git' }, 400, 'APP_GIT_INVALID_SLUG'],
    ['a slug with a slash', 'POST', `${api}/repositories`, owner.auth, { name: 'x', slug: '../x' }, 400, 'APP_VALIDATION_FAILED'],
    ['a name with no slug in it', 'POST', `${api}/repositories`, owner.auth, { name: '!!!' }, 400, 'APP_GIT_INVALID_SLUG'],
    ['a blank name', 'POST', `${api}/repositories`, owner.auth, { name: '   ' }, 400, 'APP_INVALID_NAME'],
    ['a bad default branch', 'POST', `${api}/repositories`, owner.auth, { name: 'x', defaultBranch: 'a..b' }, 400, 'APP_GIT_INVALID_REF_NAME'],
    ['an option as default branch', 'POST', `${api}/repositories`, owner.auth, { name: 'x', defaultBranch: '--upload-pack=x' }, 400, 'APP_GIT_INVALID_REF_NAME'],
    ['an unknown field', 'POST', `${api}/repositories`, owner.auth, { name: 'x', owner: 'me' }, 400, 'APP_VALIDATION_FAILED'],
    ['a default branch that does not exist', 'PUT', `${api}/repositories/repo`, owner.auth, { defaultBranch: 'nope' }, 400, 'APP_GIT_BRANCH_UNKNOWN'],
    ['a new slug ending in .git', 'PUT', `${api}/repositories/repo`, owner.auth, { slug: 'repo.git' }, 400, 'APP_GIT_INVALID_SLUG'],
    ['an empty update', 'PUT', `${api}/repositories/repo`, owner.auth, {}, 400, 'APP_VALIDATION_FAILED']
  ]
  for (const [name, method, url, headers, body, status, code] of cases) {
    const res = await call(app, method, url, headers, body)
    t.equal(res.status, status, name)
    t.equal(res.body.code, code, name)
    if (status === 403) t.match(res.body.details.permission, /^git\./, `${name}: names the permission`)
  }
  await world.createRepo({ name: 'Second' })
  const clash = await call(app, 'PUT', `${api}/repositories/second`, owner.auth, { slug: 'repo' })
  t.equal(clash.status, 409)
  t.equal(clash.body.code, 'APP_GIT_SLUG_TAKEN')
})

t.test('deleting the project removes its repositories from disk', async (t) => {
  const world = await gitWorld(t)
  await world.createRepo({ name: 'Repo', readme: true })
  const repo = await world.app.git.repositories.get(world.projectId, 'repo')
  t.ok(existsSync(repo.gitDir))
  t.equal((await call(world.app, 'DELETE', `/api/projects/${world.projectId}`, world.owner.auth)).status, 200)
  t.notOk(existsSync(repo.gitDir))
  t.equal(await world.app.git.repositories.find(world.projectId, 'repo'), null)
})
