import t from 'tap'
import { execFileSync } from 'node:child_process'
import { call } from '../../helper.js'
import { gitWorld } from './fixtures.js'

t.test('branches and tags through the API', async (t) => {
  const world = await gitWorld(t)
  const { app, api, owner, member } = world
  const repoApi = `${api}/repositories/repo`
  await world.createRepo({ name: 'Repo', readme: true })
  const main = (await call(app, 'GET', `${repoApi}/branches`, owner.auth)).body.data[0]
  t.match(main, { name: 'main', default: true, protected: false })

  const created = await call(app, 'POST', `${repoApi}/branches`, member.auth, { name: 'feature/a/b', from: 'main' })
  t.equal(created.status, 201)
  t.same(created.body.data, { name: 'feature/a/b', commit: main.commit, default: false, protected: false })
  t.equal(created.headers.location, `${repoApi}/branches/feature%2Fa%2Fb`, 'Location is the collection and the name, as every create')
  t.equal((await call(app, 'POST', `${repoApi}/branches`, member.auth, { name: 'from-sha', from: main.commit.slice(0, 7) })).status, 201, 'from an abbreviated id')

  const light = await call(app, 'POST', `${repoApi}/tags`, member.auth, { name: 'v1' })
  t.same(light.body.data, { name: 'v1', commit: main.commit, annotated: false, message: null, tagger: null })
  const annotated = await call(app, 'POST', `${repoApi}/tags`, member.auth, { name: 'release/v2', target: 'feature/a/b', message: 'Second\n\nnotes' })
  t.equal(annotated.status, 201)
  t.equal(annotated.headers.location, `${repoApi}/tags/release%2Fv2`)
  t.match(annotated.body.data, { name: 'release/v2', commit: main.commit, annotated: true, message: 'Second\n\nnotes\n', tagger: { name: 'member', email: 'member@example.com' } })
  t.equal((await call(app, 'POST', `${repoApi}/branches`, member.auth, { name: 'from-tag', from: 'release/v2' })).body.data.commit, main.commit, 'annotated tags peel to their commit')
  t.same((await call(app, 'GET', `${repoApi}/tags`, owner.auth)).body.data.map((tag: { name: string }) => tag.name), ['release/v2', 'v1'])

  await call(app, 'POST', `${repoApi}/protected-branches`, owner.auth, { pattern: 'feature/**' })
  const listed = (await call(app, 'GET', `${repoApi}/branches`, owner.auth)).body.data
  t.same(listed.map((branch: { name: string, protected: boolean }) => [branch.name, branch.protected]), [['feature/a/b', true], ['from-sha', false], ['from-tag', false], ['main', false]])

  const cases: Array<[string, 'POST' | 'DELETE', string, Record<string, string>, unknown, number, string]> = [
    ['a viewer creates a branch', 'POST', `${repoApi}/branches`, world.viewer.auth, { name: 'x' }, 403, 'APP_FORBIDDEN'],
    ['an outsider creates a branch', 'POST', `${repoApi}/branches`, world.outsider.auth, { name: 'x' }, 404, 'APP_PROJECT_NOT_FOUND'],
    ['an existing branch', 'POST', `${repoApi}/branches`, member.auth, { name: 'feature/a/b' }, 409, 'APP_GIT_REF_CONFLICT'],
    ['a name with ..', 'POST', `${repoApi}/branches`, member.auth, { name: 'a..b' }, 400, 'APP_GIT_INVALID_REF_NAME'],
    ['a name ending .lock', 'POST', `${repoApi}/branches`, member.auth, { name: 'a.lock' }, 400, 'APP_GIT_INVALID_REF_NAME'],
    ['a name like an option', 'POST', `${repoApi}/branches`, member.auth, { name: '-f' }, 400, 'APP_GIT_INVALID_REF_NAME'],
    ['HEAD', 'POST', `${repoApi}/branches`, member.auth, { name: 'HEAD' }, 400, 'APP_GIT_INVALID_REF_NAME'],
    ['from nowhere', 'POST', `${repoApi}/branches`, member.auth, { name: 'x', from: 'nope' }, 404, 'APP_GIT_REF_NOT_FOUND'],
    ['from an option', 'POST', `${repoApi}/branches`, member.auth, { name: 'x', from: '--all' }, 400, 'APP_GIT_INVALID_REF'],
    ['delete the default branch', 'DELETE', `${repoApi}/branches?name=main`, member.auth, undefined, 400, 'APP_GIT_DEFAULT_BRANCH'],
    ['delete a protected branch', 'DELETE', `${repoApi}/branches?name=feature/a/b`, member.auth, undefined, 403, 'APP_GIT_BRANCH_PROTECTED'],
    ['delete a missing branch', 'DELETE', `${repoApi}/branches?name=nope`, member.auth, undefined, 404, 'APP_GIT_BRANCH_NOT_FOUND'],
    ['delete without a name', 'DELETE', `${repoApi}/branches`, member.auth, undefined, 400, 'APP_VALIDATION_FAILED'],
    ['an existing tag', 'POST', `${repoApi}/tags`, member.auth, { name: 'v1' }, 409, 'APP_GIT_REF_CONFLICT'],
    ['a tag with a space', 'POST', `${repoApi}/tags`, member.auth, { name: 'v 1' }, 400, 'APP_GIT_INVALID_REF_NAME'],
    ['delete a missing tag', 'DELETE', `${repoApi}/tags?name=v9`, member.auth, undefined, 404, 'APP_GIT_TAG_NOT_FOUND'],
    ['a viewer deletes a tag', 'DELETE', `${repoApi}/tags?name=v1`, world.viewer.auth, undefined, 403, 'APP_FORBIDDEN']
  ]
  for (const [name, method, url, headers, body, status, code] of cases) {
    const res = await call(app, method, url, headers, body)
    t.equal(res.status, status, name)
    t.equal(res.body.code, code, name)
  }
  t.same((await call(app, 'DELETE', `${repoApi}/branches?name=from-sha`, member.auth)).body.data, { id: 'from-sha', deleted: true }, 'the one delete answer')
  t.same((await call(app, 'DELETE', `${repoApi}/tags?name=release/v2`, member.auth)).body.data, { id: 'release/v2', deleted: true })
  t.same((await call(app, 'GET', `${repoApi}/tags`, owner.auth)).body.data.map((tag: { name: string }) => tag.name), ['v1'])
  await call(app, 'PUT', `${repoApi}/protected-branches/${(await call(app, 'GET', `${repoApi}/protected-branches`, owner.auth)).body.data[0].id as string}`, owner.auth, { allowDelete: true, push: 'admin' })
  t.equal((await call(app, 'DELETE', `${repoApi}/branches?name=feature/a/b`, member.auth)).body.code, 'APP_GIT_BRANCH_PROTECTED', 'a writer may not touch an admin-only branch')
  t.equal((await call(app, 'DELETE', `${repoApi}/branches?name=feature/a/b`, owner.auth)).status, 200, 'an admin may, when the rule allows deletion')

  const repo = await app.git.repositories.get(world.projectId, 'repo')
  // Throws on a non-zero exit; a deleted annotated tag leaves a dangling tag object, which is not an error.
  t.equal(execFileSync('git', ['--git-dir', repo.gitDir, 'fsck', '--strict', '--no-progress', '--no-dangling']).toString(), '', 'git fsck --strict is clean after the API\'s writes')
})
