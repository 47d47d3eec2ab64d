import t from 'tap'
import { call } from '../../helper.js'
import { mrWorld } from './merge-requests-fixtures.js'

t.test('merge requests: create, get, list with filters and pages, patch, close, reopen', async (t) => {
  const world = await mrWorld(t)
  const { app, mrApi, owner, member } = world
  const main = (await call(app, 'GET', `${world.repoApi}/branches`, owner.auth)).body.data[0].commit as string
  const head = await world.commit('feature/one', { 'a.txt': 'a\n' }, { from: 'main' })
  await world.commit('feature/two', { 'b.txt': 'b\n' }, { from: 'main' })
  await world.commit('develop', { 'c.txt': 'c\n' }, { from: 'main' })

  for (const name of ['bug', 'UI', 'ready']) await call(app, 'POST', `${world.repoApi}/labels`, member.auth, { name, color: '#123456' })
  const created = await world.openMr({ sourceBranch: 'feature/one', title: '  First  ', description: 'Adds a' })
  t.equal(created.status, 201)
  t.equal(created.headers.location, `${mrApi}/1`)
  t.match(created.body.data, {
    iid: 1,
    title: 'First',
    description: 'Adds a',
    draft: false,
    state: 'open',
    sourceBranch: 'feature/one',
    targetBranch: 'main',
    headSha: head,
    targetSha: main,
    mergeBaseSha: main,
    sourceBranchExists: true,
    authorId: member.id,
    closedAt: null,
    mergedAt: null,
    mergeMethod: null
  })
  t.same([created.body.data.assignees, created.body.data.reviewers, created.body.data.labels], [[], [], []])
  const second = await world.openMr({ sourceBranch: 'feature/two', targetBranch: 'develop', title: 'Second', draft: true, assignees: [member.id, member.id], reviewers: [world.viewer.id], labels: ['bug', ' ui ', 'bug'] }, owner.auth)
  t.match(second.body.data, { assignees: [member.id], reviewers: [world.viewer.id], labels: ['bug', 'UI'] }, 'people and labels, each once, labels as the repository names them')
  t.equal(second.body.data.iid, 2, 'numbers count per repository')
  t.equal(second.body.data.mergeBaseSha, main)
  t.same((await call(app, 'GET', `${mrApi}/1`, world.viewer.auth)).body.data, created.body.data, 'a viewer reads it as created')

  const iids = async (query: string) => (await call(app, 'GET', `${mrApi}${query}`, world.viewer.auth)).body.data.items.map((mr: { iid: number }) => mr.iid)
  t.same(await iids(''), [2, 1], 'open ones, newest first')
  t.same(await iids(`?author=${owner.id}`), [2])
  t.same(await iids('?target=main'), [1])
  t.same(await iids('?source=feature/two'), [2])
  t.same(await iids('?draft=true'), [2])
  t.same(await iids('?draft=false'), [1])
  t.same(await iids(`?assignee=${member.id}`), [2])
  t.same(await iids(`?reviewer=${world.viewer.id}`), [2])
  t.same(await iids('?label=ui'), [2])
  t.same(await iids('?label=nope'), [])
  const first = (await call(app, 'GET', `${mrApi}?limit=1`, owner.auth)).body.data
  t.same(first.items.map((mr: { iid: number }) => mr.iid), [2])
  t.equal(first.nextCursor, '2')
  const next = (await call(app, 'GET', `${mrApi}?limit=1&cursor=${first.nextCursor as string}`, owner.auth)).body.data
  t.same([next.items.map((mr: { iid: number }) => mr.iid), next.nextCursor], [[1], null])

  const patched = await call(app, 'PATCH', `${mrApi}/2`, member.auth, { title: 'Second, ready', draft: false, targetBranch: 'main', description: 'now into main' })
  t.equal(patched.status, 200)
  t.match(patched.body.data, { title: 'Second, ready', draft: false, targetBranch: 'main', targetSha: main, description: 'now into main', assignees: [member.id], labels: ['bug', 'UI'] })
  const people = await call(app, 'PATCH', `${mrApi}/2`, member.auth, { assignees: [], reviewers: [owner.id, member.id], labels: ['ready'] })
  t.match(people.body.data, { assignees: [], reviewers: [owner.id, member.id], labels: ['ready'] }, 'each list given replaces the old one')
  const labels = (await call(app, 'GET', `${world.repoApi}/labels`, owner.auth)).body.data as Array<{ id: string, name: string }>
  await call(app, 'PATCH', `${world.repoApi}/labels/${labels.find((label) => label.name === 'ready')?.id ?? ''}`, member.auth, { name: 'Ready to go' })
  t.same((await call(app, 'GET', `${mrApi}/2`, owner.auth)).body.data.labels, ['Ready to go'], 'a renamed label is renamed on the merge requests')
  await call(app, 'DELETE', `${world.repoApi}/labels/${labels.find((label) => label.name === 'ready')?.id ?? ''}`, member.auth)
  t.same((await call(app, 'GET', `${mrApi}/2`, owner.auth)).body.data.labels, [], 'a deleted one leaves them')
  const notReader = await call(app, 'PATCH', `${mrApi}/2`, member.auth, { reviewers: [owner.id, world.outsider.id, 'nobody'] })
  t.same([notReader.status, notReader.body.code, notReader.body.details], [400, 'APP_GIT_MR_NOT_A_READER', { ids: [world.outsider.id, 'nobody'] }], 'only people who can read the repository')

  const closed = await call(app, 'POST', `${mrApi}/1/close`, member.auth)
  t.match(closed.body.data, { state: 'closed', closedBy: member.id, closedAt: /Z$/ })
  t.same(await iids(''), [2])
  t.same(await iids('?state=closed'), [1])
  t.same(await iids('?state=all'), [2, 1])
  const again = await world.openMr({ sourceBranch: 'feature/one', title: 'Again' })
  t.equal(again.body.data.iid, 3, 'a closed one does not hold its branches')
  t.equal((await call(app, 'POST', `${mrApi}/1/reopen`, member.auth)).body.code, 'APP_GIT_MR_EXISTS', 'not while another is open for the same branches')
  await call(app, 'POST', `${mrApi}/3/close`, member.auth)
  const reopened = await call(app, 'POST', `${mrApi}/1/reopen`, member.auth)
  t.match(reopened.body.data, { state: 'open', closedAt: null, closedBy: null })

  await call(app, 'POST', `${world.repoApi}/branches`, owner.auth, { name: 'at-main', from: 'main' })
  const cases: Array<[string, 'GET' | 'POST' | 'PATCH', string, Record<string, string>, unknown, number, string]> = [
    ['a viewer opens one', 'POST', mrApi, world.viewer.auth, { sourceBranch: 'develop', title: 'x' }, 403, 'APP_FORBIDDEN'],
    ['an outsider opens one', 'POST', mrApi, world.outsider.auth, { sourceBranch: 'develop', title: 'x' }, 404, 'APP_PROJECT_NOT_FOUND'],
    ['an outsider lists', 'GET', mrApi, world.outsider.auth, undefined, 404, 'APP_PROJECT_NOT_FOUND'],
    ['no credential', 'GET', mrApi, {}, undefined, 401, 'APP_UNAUTHORIZED'],
    ['a missing source', 'POST', mrApi, member.auth, { sourceBranch: 'nope', title: 'x' }, 400, 'APP_GIT_BRANCH_UNKNOWN'],
    ['a missing target', 'POST', mrApi, member.auth, { sourceBranch: 'develop', targetBranch: 'nope', title: 'x' }, 400, 'APP_GIT_BRANCH_UNKNOWN'],
    ['the same branch', 'POST', mrApi, member.auth, { sourceBranch: 'main', title: 'x' }, 400, 'APP_GIT_MR_SAME_BRANCH'],
    ['nothing to merge', 'POST', mrApi, member.auth, { sourceBranch: 'at-main', title: 'x' }, 400, 'APP_GIT_MR_NOTHING_TO_MERGE'],
    ['a bad branch name', 'POST', mrApi, member.auth, { sourceBranch: 'a..b', title: 'x' }, 400, 'APP_GIT_INVALID_REF_NAME'],
    ['an option as branch', 'POST', mrApi, member.auth, { sourceBranch: '--all', title: 'x' }, 400, 'APP_GIT_INVALID_REF_NAME'],
    ['a blank title', 'POST', mrApi, member.auth, { sourceBranch: 'develop', title: '   ' }, 400, 'APP_GIT_MR_TITLE_REQUIRED'],
    ['no title', 'POST', mrApi, member.auth, { sourceBranch: 'develop' }, 400, 'APP_VALIDATION_FAILED'],
    ['too many labels', 'POST', mrApi, member.auth, { sourceBranch: 'develop', title: 'x', labels: Array.from({ length: 21 }, (_, i) => `l${i}`) }, 400, 'APP_VALIDATION_FAILED'],
    ['a label with a comma', 'POST', mrApi, member.auth, { sourceBranch: 'develop', title: 'x', labels: ['a,b'] }, 400, 'APP_VALIDATION_FAILED'],
    ['a label the repository lacks', 'POST', mrApi, member.auth, { sourceBranch: 'develop', title: 'x', labels: ['bug', 'later'] }, 400, 'APP_GIT_LABEL_UNKNOWN'],
    ['a label the repository lacks, on a patch', 'PATCH', `${mrApi}/1`, member.auth, { labels: ['later'] }, 400, 'APP_GIT_LABEL_UNKNOWN'],
    ['an outsider assigned', 'POST', mrApi, member.auth, { sourceBranch: 'develop', title: 'x', assignees: [world.outsider.id] }, 400, 'APP_GIT_MR_NOT_A_READER'],
    ['an unknown field', 'POST', mrApi, member.auth, { sourceBranch: 'develop', title: 'x', milestone: 1 }, 400, 'APP_VALIDATION_FAILED'],
    ['the same pair twice', 'POST', mrApi, member.auth, { sourceBranch: 'feature/one', title: 'x' }, 409, 'APP_GIT_MR_EXISTS'],
    ['an unknown repository', 'GET', `${world.api}/repositories/nope/merge-requests`, member.auth, undefined, 404, 'APP_GIT_REPOSITORY_NOT_FOUND'],
    ['an unknown number', 'GET', `${mrApi}/99`, member.auth, undefined, 404, 'APP_GIT_MR_NOT_FOUND'],
    ['number zero', 'GET', `${mrApi}/0`, member.auth, undefined, 400, 'APP_VALIDATION_FAILED'],
    ['a number that is not one', 'GET', `${mrApi}/abc`, member.auth, undefined, 400, 'APP_VALIDATION_FAILED'],
    ['a bad state filter', 'GET', `${mrApi}?state=done`, member.auth, undefined, 400, 'APP_VALIDATION_FAILED'],
    ['a bad cursor', 'GET', `${mrApi}?cursor=x`, member.auth, undefined, 400, 'APP_VALIDATION_FAILED'],
    ['an empty patch', 'PATCH', `${mrApi}/1`, member.auth, {}, 400, 'APP_VALIDATION_FAILED'],
    ['a viewer patches', 'PATCH', `${mrApi}/1`, world.viewer.auth, { title: 'x' }, 403, 'APP_FORBIDDEN'],
    ['retarget to the source', 'PATCH', `${mrApi}/1`, member.auth, { targetBranch: 'feature/one' }, 400, 'APP_GIT_MR_SAME_BRANCH'],
    ['retarget to nowhere', 'PATCH', `${mrApi}/1`, member.auth, { targetBranch: 'nope' }, 400, 'APP_GIT_BRANCH_UNKNOWN'],
    ['retarget a closed one', 'PATCH', `${mrApi}/3`, member.auth, { targetBranch: 'develop' }, 409, 'APP_GIT_MR_NOT_OPEN'],
    ['close a closed one', 'POST', `${mrApi}/3/close`, member.auth, undefined, 409, 'APP_GIT_MR_NOT_OPEN'],
    ['reopen an open one', 'POST', `${mrApi}/1/reopen`, member.auth, undefined, 409, 'APP_GIT_MR_NOT_CLOSED'],
    ['a viewer closes', 'POST', `${mrApi}/1/close`, world.viewer.auth, undefined, 403, 'APP_FORBIDDEN'],
    ['an outsider reads', 'GET', `${mrApi}/1`, world.outsider.auth, undefined, 404, 'APP_PROJECT_NOT_FOUND']
  ]
  for (const [name, method, url, headers, body, status, code] of cases) {
    const res = await call(app, method, url, headers, body)
    t.equal(res.status, status, name)
    t.equal(res.body.code, code, name)
  }

  const racing = await Promise.all(Array.from({ length: 4 }, async () => await world.openMr({ sourceBranch: 'develop', title: 'Race' })))
  const winners = racing.filter((res) => res.status === 201)
  t.equal(winners.length, 1, 'of concurrent creates for one pair, one wins')
  for (const res of racing.filter((candidate) => candidate.status !== 201)) {
    t.same([res.status, res.body.code, res.body.details], [409, 'APP_GIT_MR_EXISTS', { ids: [winners[0].body.data.id], actual: winners[0].body.data.iid }], 'the others are told which')
  }

  await call(app, 'POST', `${mrApi}/2/close`, member.auth)
  t.equal((await call(app, 'DELETE', `${world.repoApi}/branches?name=feature/two`, member.auth)).status, 200)
  const orphan = await call(app, 'POST', `${mrApi}/2/reopen`, member.auth)
  t.same([orphan.status, orphan.body.code], [409, 'APP_GIT_MR_SOURCE_MISSING'], 'a closed one whose source went away stays closed')

  const deleted = await call(app, 'DELETE', world.repoApi, owner.auth)
  t.equal(deleted.status, 200)
  t.equal(await app.store.collection('git_merge_requests').countDocuments({}), 0, 'a deleted repository takes its merge requests along')
})
