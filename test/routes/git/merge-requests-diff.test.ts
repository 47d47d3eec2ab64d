import t from 'tap'
import { call } from '../../helper.js'
import { mrWorld } from './merge-requests-fixtures.js'

t.test('diff against the merge base and the commits list', async (t) => {
  const world = await mrWorld(t)
  const { app, mrApi, viewer } = world
  const c1 = await world.commit('topic', { 'src/a.ts': 'a\n', 'README.md': '# hello\nmore\n' }, { from: 'main', message: 'first' })
  const c2 = await world.commit('topic', { 'src/b.ts': 'b\n' }, { message: 'second' })
  const base = (await call(app, 'GET', `${world.repoApi}/branches`, viewer.auth)).body.data.find((branch: { name: string }) => branch.name === 'main').commit as string
  await world.commit('main', { 'later.txt': 'on main only\n' })
  await world.openMr({ sourceBranch: 'topic', title: 'Topic' })

  const diff = await call(app, 'GET', `${mrApi}/1/diff`, viewer.auth)
  t.equal(diff.status, 200)
  t.match(diff.body.data, { sha: c2, base, truncated: false, stats: { files: 3, additions: 4, deletions: 1 } })
  t.same(diff.body.data.files.map((file: { path: string, status: string }) => [file.path, file.status]), [['README.md', 'modified'], ['src/a.ts', 'added'], ['src/b.ts', 'added']], 'what the target gained since is not in it')
  t.match(diff.body.data.files[0].patch, /^diff --git a\/README.md b\/README.md[\s\S]*\+more/)
  const commits = await call(app, 'GET', `${mrApi}/1/commits`, viewer.auth)
  t.same(commits.body.data.items.map((commit: { sha: string, title: string }) => [commit.sha, commit.title]), [[c1, 'first'], [c2, 'second']], 'oldest first')
  t.equal(commits.body.data.truncated, false)
  // The head is kept under refs/merge-requests/, so the diff outlives the source branch and a gc.
  const listed = await world.git.run(['ls-remote', world.url('repo', world.token), 'refs/merge-requests/*'])
  t.equal(listed.stdout, `${c2}\trefs/merge-requests/1/head\n`)
  await call(app, 'DELETE', `${world.repoApi}/branches?name=topic`, world.owner.auth)
  const repo = await world.repo()
  t.equal((await world.git.run(['--git-dir', repo.gitDir, 'gc', '-q', '--prune=now'])).code, 0)
  const after = await call(app, 'GET', `${mrApi}/1/diff`, viewer.auth)
  t.same([after.status, after.body.data.files.length], [200, 3], 'still there after the branch went and git gc ran')
  t.equal((await call(app, 'GET', `${mrApi}/1/commits`, viewer.auth)).body.data.items.length, 2)
  for (const [name, url, auth, status, code] of [
    ['an outsider diffs', `${mrApi}/1/diff`, world.outsider.auth, 404, 'APP_PROJECT_NOT_FOUND'],
    ['an unknown merge request', `${mrApi}/7/commits`, viewer.auth, 404, 'APP_GIT_MR_NOT_FOUND'],
    ['an outsider checks', `${mrApi}/1/merge-check`, world.outsider.auth, 404, 'APP_PROJECT_NOT_FOUND'],
    ['a short expected head', `${mrApi}/1/merge-check?expectedHeadSha=abc`, viewer.auth, 400, 'APP_VALIDATION_FAILED'],
    ['an outsider lists reviews', `${mrApi}/1/reviews`, world.outsider.auth, 404, 'APP_PROJECT_NOT_FOUND']
  ] as Array<[string, string, Record<string, string>, number, string]>) {
    const res = await call(app, 'GET', url, auth)
    t.same([res.status, res.body.code], [status, code], name)
  }
})

t.test('merge refusals: who, which branches, which methods', async (t) => {
  const world = await mrWorld(t)
  const { app, mrApi, owner, member, viewer } = world
  await world.commit('topic', { 't.txt': '1\n' }, { from: 'main' })
  await world.commit('merged-in', { 'm.txt': '1\n' }, { from: 'main' })
  await world.commit('main', { 'pre.txt': '1\n' })
  await world.git.run(['checkout', '-q', 'merged-in'], { cwd: world.work })
  await world.git.run(['merge', '-q', '--no-ff', '-m', 'merge main in', 'origin/main'], { cwd: world.work })
  t.equal((await world.git.run(['push', '-q', 'origin', 'merged-in'], { cwd: world.work })).code, 0)
  await world.commit('main', { 'main.txt': '1\n' })
  await world.openMr({ sourceBranch: 'topic', title: 'Topic' })
  await world.openMr({ sourceBranch: 'merged-in', title: 'With a merge' })
  await call(app, 'POST', `${world.repoApi}/protected-branches`, owner.auth, { pattern: 'topic' })
  const merge = async (iid: number, body: unknown, auth = member.auth) => await call(app, 'POST', `${mrApi}/${iid}/merge`, auth, body)
  const cases: Array<[string, number, unknown, Record<string, string>, number, string]> = [
    ['a viewer merges', 1, {}, viewer.auth, 403, 'APP_FORBIDDEN'],
    ['an outsider merges', 1, {}, world.outsider.auth, 404, 'APP_PROJECT_NOT_FOUND'],
    ['an unknown merge request', 9, {}, member.auth, 404, 'APP_GIT_MR_NOT_FOUND'],
    ['an unknown method', 1, { method: 'octopus' }, member.auth, 400, 'APP_VALIDATION_FAILED'],
    ['a short expected head', 1, { expectedHeadSha: 'abc' }, member.auth, 400, 'APP_VALIDATION_FAILED'],
    ['deleting a protected source', 1, { deleteSourceBranch: true }, member.auth, 403, 'APP_GIT_BRANCH_PROTECTED'],
    ['a rebase of merge commits', 2, { method: 'rebase' }, member.auth, 409, 'APP_GIT_MR_REBASE_UNSUPPORTED']
  ]
  for (const [name, iid, body, auth, status, code] of cases) {
    const res = await merge(iid, body, auth)
    t.same([res.status, res.body.code], [status, code], name)
  }
  await call(app, 'POST', `${mrApi}/1/reviews`, owner.auth, { state: 'changes_requested', body: 'Not yet' })
  t.same((await merge(1, {})).body.code, 'APP_GIT_MR_CHANGES_REQUESTED')

  const messaged = await merge(2, { method: 'merge', commitMessage: 'Custom message\n\nbody' })
  t.equal(messaged.status, 200, JSON.stringify(messaged.body))
  const repo = await world.repo()
  t.equal((await world.git.run(['--git-dir', repo.gitDir, 'log', '-1', '--format=%B', 'main'])).stdout, 'Custom message\n\nbody\n\n')

  await world.commit('gone', { 'g.txt': '1\n' }, { from: 'main' })
  await world.openMr({ sourceBranch: 'gone', title: 'Gone' })
  await call(app, 'DELETE', `${world.repoApi}/branches?name=gone`, member.auth)
  const check = (await call(app, 'GET', `${mrApi}/3/merge-check`, member.auth)).body.data
  t.same(check.blockers.map((blocker: { code: string }) => blocker.code), ['source_missing'])
  t.same((await merge(3, {})).body.code, 'APP_GIT_MR_SOURCE_MISSING')
  t.match((await call(app, 'GET', `${mrApi}/3`, member.auth)).body.data, { sourceBranchExists: false, state: 'open' })
})
