import t from 'tap'
import { call } from '../../helper.js'
import { gitWorld } from './fixtures.js'

t.test('labels: created, listed, renamed, recolored, deleted; names unique with letter case aside', async (t) => {
  const world = await gitWorld(t)
  const { app, api, owner, member } = world
  await world.createRepo({ name: 'Repo' })
  await world.createRepo({ name: 'Other' })
  const labelsApi = `${api}/repositories/repo/labels`
  const created = await call(app, 'POST', labelsApi, member.auth, { name: ' Bug ', color: '#D73A4A', description: 'Something is wrong' })
  t.equal(created.status, 201)
  t.equal(created.headers.location, `${labelsApi}/${created.body.data.id as string}`)
  t.match(created.body.data, { name: 'Bug', color: '#d73a4a', description: 'Something is wrong', createdAt: /Z$/ })
  const id = created.body.data.id as string
  await call(app, 'POST', labelsApi, member.auth, { name: 'area/ui', color: '#000000' })
  t.equal((await call(app, 'POST', `${api}/repositories/other/labels`, member.auth, { name: 'bug', color: '#000000' })).status, 201, 'another repository has its own names')
  const renamed = await call(app, 'PATCH', `${labelsApi}/${id}`, member.auth, { name: 'defect', color: '#FFFFFF' })
  t.match(renamed.body.data, { id, name: 'defect', color: '#ffffff', description: 'Something is wrong' })
  t.same((await call(app, 'GET', labelsApi, world.viewer.auth)).body.data.map((label: { name: string }) => label.name), ['area/ui', 'defect'])

  const cases: Array<[string, 'GET' | 'POST' | 'PATCH' | 'DELETE', string, Record<string, string>, unknown, number, string]> = [
    ['no credential', 'GET', labelsApi, {}, undefined, 401, 'APP_UNAUTHORIZED'],
    ['an outsider lists', 'GET', labelsApi, world.outsider.auth, undefined, 404, 'APP_PROJECT_NOT_FOUND'],
    ['a viewer creates', 'POST', labelsApi, world.viewer.auth, { name: 'x', color: '#000000' }, 403, 'APP_FORBIDDEN'],
    ['a viewer renames', 'PATCH', `${labelsApi}/${id}`, world.viewer.auth, { name: 'x' }, 403, 'APP_FORBIDDEN'],
    ['a viewer deletes', 'DELETE', `${labelsApi}/${id}`, world.viewer.auth, undefined, 403, 'APP_FORBIDDEN'],
    ['a color by name', 'POST', labelsApi, member.auth, { name: 'x', color: 'red' }, 400, 'APP_VALIDATION_FAILED'],
    ['a short color', 'POST', labelsApi, member.auth, { name: 'x', color: '#fff' }, 400, 'APP_VALIDATION_FAILED'],
    ['no color', 'POST', labelsApi, member.auth, { name: 'x' }, 400, 'APP_VALIDATION_FAILED'],
    ['a comma', 'POST', labelsApi, member.auth, { name: 'a,b', color: '#000000' }, 400, 'APP_VALIDATION_FAILED'],
    ['a blank name', 'POST', labelsApi, member.auth, { name: '   ', color: '#000000' }, 400, 'APP_GIT_LABEL_NAME_REQUIRED'],
    ['an unknown field', 'POST', labelsApi, member.auth, { name: 'x', color: '#000000', priority: 1 }, 400, 'APP_VALIDATION_FAILED'],
    ['a name taken, letter case aside', 'POST', labelsApi, member.auth, { name: 'DEFECT', color: '#000000' }, 409, 'APP_GIT_LABEL_EXISTS'],
    ['renamed onto another', 'PATCH', `${labelsApi}/${id}`, member.auth, { name: 'Area/UI' }, 409, 'APP_GIT_LABEL_EXISTS'],
    ['an empty change', 'PATCH', `${labelsApi}/${id}`, member.auth, {}, 400, 'APP_VALIDATION_FAILED'],
    ['an unknown label', 'PATCH', `${labelsApi}/nope`, member.auth, { color: '#000000' }, 404, 'APP_GIT_LABEL_NOT_FOUND'],
    ['delete an unknown label', 'DELETE', `${labelsApi}/nope`, member.auth, undefined, 404, 'APP_GIT_LABEL_NOT_FOUND'],
    ['an unknown repository', 'GET', `${api}/repositories/nope/labels`, member.auth, undefined, 404, 'APP_GIT_REPOSITORY_NOT_FOUND']
  ]
  for (const [name, method, url, headers, body, status, code] of cases) {
    const res = await call(app, method, url, headers, body)
    t.equal(res.status, status, name)
    t.equal(res.body.code, code, name)
    if (status === 403) t.equal(res.body.details.permission, 'git.write', `${name}: names the permission`)
  }
  t.equal((await call(app, 'DELETE', `${labelsApi}/${id}`, member.auth)).status, 200)
  t.same((await call(app, 'GET', labelsApi, owner.auth)).body.data.map((label: { name: string }) => label.name), ['area/ui'])
  t.equal((await call(app, 'DELETE', `${api}/repositories/repo`, owner.auth)).status, 200)
  t.equal(await app.store.collection('git_labels').countDocuments({}), 1, 'a deleted repository takes its labels along')
})
