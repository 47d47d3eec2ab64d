import t, { type Test } from 'tap'
import { join } from 'node:path'
import { call } from '../../helper.js'
import { mrWorld, type MrWorld } from './merge-requests-fixtures.js'

/** A fresh clone of the repository and `git log` of its main branch: one line per commit, `sha parents|author email|committer email|subject`. */
async function history (world: MrWorld, name: string): Promise<string[]> {
  const clone = await world.git.run(['clone', '-q', world.url('repo', world.token), name])
  if (clone.code !== 0) throw new Error(clone.stderr)
  const log = await world.git.run(['log', '--format=%H %P|%ae|%ce|%s', 'main'], { cwd: join(world.git.home, name) })
  return log.stdout.trim().split('\n')
}

async function fsckClean (t: Test, world: MrWorld, clone: string): Promise<void> {
  const server = await world.git.run(['--git-dir', (await world.repo()).gitDir, 'fsck', '--strict', '--no-progress', '--no-dangling'])
  t.equal(server.code, 0, `git fsck --strict on the server: ${server.stdout}${server.stderr}`)
  const local = await world.git.run(['fsck', '--strict', '--no-progress', '--no-dangling'], { cwd: join(world.git.home, clone) })
  t.equal(local.code, 0, `git fsck --strict on a fresh clone: ${local.stdout}${local.stderr}`)
}

const mainHead = async (world: MrWorld): Promise<string> => (await world.git.run(['ls-remote', world.url('repo', world.token), 'refs/heads/main'])).stdout.split('\t')[0]

t.test('each merge method leaves the history shape it promises, and fsck stays clean', async (t) => {
  const world = await mrWorld(t)
  const { app, mrApi, owner } = world
  const merge = async (iid: number, body: Record<string, unknown>) => await call(app, 'POST', `${mrApi}/${iid as number}/merge`, owner.auth, body)

  // merge: a merge commit whose parents are the old target and the source head
  await world.commit('f-merge', { 'm1.txt': '1\n' }, { from: 'main' })
  const mergeHead = await world.commit('f-merge', { 'm2.txt': '2\n' })
  const before1 = await world.commit('main', { 'main1.txt': 'x\n' })
  t.equal((await world.openMr({ sourceBranch: 'f-merge', title: 'By merge' })).status, 201)
  const merged = await merge(1, { method: 'merge', expectedHeadSha: mergeHead })
  t.equal(merged.status, 200, JSON.stringify(merged.body))
  t.match(merged.body.data, { method: 'merge', sourceBranchDeleted: false, mergeRequest: { state: 'merged', mergedBy: owner.id, mergeMethod: 'merge' } })
  const log1 = await history(world, 'after-merge')
  t.equal(log1[0], `${merged.body.data.commitSha as string} ${before1} ${mergeHead}|owner@example.com|owner@example.com|Merge branch 'f-merge' into 'main'`, 'a merge commit with two parents')
  t.equal(merged.body.data.mergeRequest.mergeCommitSha, merged.body.data.commitSha)
  await fsckClean(t, world, 'after-merge')

  // squash: one new commit, one parent, authored by the merge request's author; the source branch deleted
  await world.commit('f-squash', { 's1.txt': '1\n' }, { from: 'main' })
  await world.commit('f-squash', { 's2.txt': '2\n' })
  const before2 = await world.commit('main', { 'main2.txt': 'x\n' })
  await world.openMr({ sourceBranch: 'f-squash', title: 'By squash', description: 'Two files' })
  const squashed = await merge(2, { method: 'squash', deleteSourceBranch: true })
  t.equal(squashed.status, 200, JSON.stringify(squashed.body))
  t.equal(squashed.body.data.sourceBranchDeleted, true)
  t.match(squashed.body.data.mergeRequest, { sourceBranchExists: false })
  const log2 = await history(world, 'after-squash')
  t.equal(log2.length, log1.length + 2, 'one commit on main, one squash commit')
  t.equal(log2[0], `${squashed.body.data.commitSha as string} ${before2}|member@example.com|owner@example.com|By squash`, 'one parent, the author is the merge request\'s')
  t.equal((await world.git.run(['ls-tree', '--name-only', 'main'], { cwd: join(world.git.home, 'after-squash') })).stdout.split('\n').filter((name) => name.startsWith('s')).length, 2)
  t.equal((await world.git.run(['ls-remote', world.url('repo', world.token), 'refs/heads/f-squash'])).stdout, '', 'the source branch is gone')
  await fsckClean(t, world, 'after-squash')

  // fast-forward: refused while the target has commits the source lacks, then no new commit at all
  await world.commit('f-ff', { 'ff1.txt': '1\n' }, { from: 'main' })
  const ffHead = await world.commit('f-ff', { 'ff2.txt': '2\n' })
  await world.openMr({ sourceBranch: 'f-ff', title: 'By fast-forward' })
  const check = await call(app, 'GET', `${mrApi}/3/merge-check`, owner.auth)
  t.match(check.body.data, { mergeable: true, fastForward: true, headSha: ffHead, blockers: [] })
  const ff = await merge(3, { method: 'fast-forward', expectedHeadSha: ffHead })
  t.equal(ff.status, 200, JSON.stringify(ff.body))
  t.equal(ff.body.data.commitSha, ffHead, 'the target moves to the source head')
  const log3 = await history(world, 'after-ff')
  t.equal(log3.length, log2.length + 2, 'no commit of its own')
  t.equal(log3[0].split(' ')[0], ffHead)
  await fsckClean(t, world, 'after-ff')

  // rebase: the source's commits replayed on the moved target, linear, authors and messages kept
  await world.commit('f-rebase', { 'r1.txt': '1\n' }, { from: 'main', message: 'first of two' })
  await world.commit('f-rebase', { 'r2.txt': '2\n' }, { message: 'second of two' })
  const before4 = await world.commit('main', { 'main4.txt': 'x\n' })
  await world.openMr({ sourceBranch: 'f-rebase', title: 'By rebase' })
  t.equal((await merge(4, { method: 'fast-forward' })).body.code, 'APP_GIT_MR_NOT_FAST_FORWARD', 'no fast-forward once the target moved')
  const rebased = await merge(4, { method: 'rebase' })
  t.equal(rebased.status, 200, JSON.stringify(rebased.body))
  const log4 = await history(world, 'after-rebase')
  t.equal(log4.length, log3.length + 3)
  const [second, first] = log4
  t.match(first, new RegExp(`^[0-9a-f]{40} ${before4}\\|tester@example.com\\|owner@example.com\\|first of two$`), 'replayed onto the new target, author kept, merger as committer')
  t.match(second, new RegExp(`^${rebased.body.data.commitSha as string} ${first.split(' ')[0]}\\|tester@example.com\\|owner@example.com\\|second of two$`))
  t.equal((await world.git.run(['rev-list', '--merges', '--count', `${before4}..main`], { cwd: join(world.git.home, 'after-rebase') })).stdout.trim(), '0', 'linear')
  await fsckClean(t, world, 'after-rebase')
  t.equal(await mainHead(world), rebased.body.data.commitSha)
})

t.test('conflicts are named, a moved source makes the merge 409, a moved target is merged onto, never overwritten', async (t) => {
  const world = await mrWorld(t)
  const { app, mrApi, owner } = world
  await world.commit('clash', { 'README.md': '# theirs\n', 'docs/guide.md': 'theirs\n', 'free.txt': 'ok\n' }, { from: 'main' })
  await world.commit('main', { 'README.md': '# ours\n', 'docs/guide.md': 'ours\n' })
  await world.openMr({ sourceBranch: 'clash', title: 'Clashing' })
  const check = await call(app, 'GET', `${mrApi}/1/merge-check`, owner.auth)
  t.same(check.body.data.conflicts, ['README.md', 'docs/guide.md'], 'merge-check names the conflicting files')
  t.same(check.body.data.blockers.map((blocker: { code: string }) => blocker.code), ['conflicts'])
  t.match(check.body.data.blockers[0].message, /README\.md, docs\/guide\.md/)
  for (const method of ['merge', 'squash', 'rebase']) {
    const res = await call(app, 'POST', `${mrApi}/1/merge`, owner.auth, { method })
    t.same([res.status, res.body.code, res.body.details], [409, 'APP_GIT_MR_CONFLICTS', { ids: ['README.md', 'docs/guide.md'] }], method)
  }

  const head = await world.commit('topic', { 'topic.txt': '1\n' }, { from: 'main' })
  await world.openMr({ sourceBranch: 'topic', title: 'Topic' })
  const checked = (await call(app, 'GET', `${mrApi}/2/merge-check?expectedHeadSha=${head}`, owner.auth)).body.data
  t.same([checked.mergeable, checked.headSha], [true, head])
  const pushed = await world.commit('topic', { 'topic.txt': '2\n' })
  const stale = await call(app, 'POST', `${mrApi}/2/merge`, owner.auth, { expectedHeadSha: head })
  t.same([stale.status, stale.body.code, stale.body.details], [409, 'APP_GIT_MR_HEAD_CHANGED', { actual: pushed }], 'a push to the source between check and merge')
  const staleCheck = (await call(app, 'GET', `${mrApi}/2/merge-check?expectedHeadSha=${head}`, owner.auth)).body.data
  t.same(staleCheck.blockers.map((blocker: { code: string }) => blocker.code), ['stale_head'])

  const moved = await world.commit('main', { 'late.txt': 'pushed first\n' })
  const merged = await call(app, 'POST', `${mrApi}/2/merge`, owner.auth, { expectedHeadSha: pushed })
  t.equal(merged.status, 200, JSON.stringify(merged.body))
  t.equal((await world.git.run(['--git-dir', (await world.repo()).gitDir, 'merge-base', '--is-ancestor', moved, 'main'])).code, 0, 'the push to the target is kept inside the merge')
  const again = await call(app, 'POST', `${mrApi}/2/merge`, owner.auth, {})
  t.same([again.status, again.body.code], [409, 'APP_GIT_MR_NOT_OPEN'])
})

t.test('a push moves open merge requests: new head recorded, merge by push noticed', async (t) => {
  const world = await mrWorld(t)
  const { app, mrApi, owner } = world
  await world.commit('grow', { 'g.txt': '1\n' }, { from: 'main' })
  await world.openMr({ sourceBranch: 'grow', title: 'Grows' })
  const listed = async () => (await call(app, 'GET', `${mrApi}?state=all`, owner.auth)).body.data.items[0]
  const until = async (wanted: (mr: Record<string, unknown>) => boolean): Promise<Record<string, unknown>> => {
    // The hook runs once receive-pack has exited, just after the client saw its answer; the list itself never refreshes.
    for (let i = 0; i < 200; i++) {
      const mr = await listed()
      if (wanted(mr)) return mr
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
    return await listed()
  }
  const next = await world.commit('grow', { 'g.txt': '2\n' })
  t.equal((await until((mr) => mr.headSha === next)).headSha, next, 'the push hook recorded the new head')
  await world.git.run(['checkout', '-q', 'main'], { cwd: world.work })
  await world.git.run(['merge', '-q', '--no-ff', '-m', 'merged by hand', 'grow'], { cwd: world.work })
  t.equal((await world.git.run(['push', '-q', 'origin', 'main'], { cwd: world.work })).code, 0)
  t.match(await until((mr) => mr.state === 'merged'), { state: 'merged', mergedBy: null, mergeMethod: null }, 'a merge pushed by hand closes it as merged')
})
