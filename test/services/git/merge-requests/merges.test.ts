import t, { type Test } from 'tap'
import { execFileSync } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { ManualClock } from '../../../../services/platform/clock.js'
import { newId } from '../../../../services/platform/ids.js'
import { GitCli } from '../../../../services/git/git-cli.js'
import { RepoReader } from '../../../../services/git/reader.js'
import { MergePlumbing, type MergeInput } from '../../../../services/git/merge-requests/merge-tree.js'
import { MergeRequests } from '../../../../services/git/merge-requests/merge-requests.js'
import { MergeService } from '../../../../services/git/merge-requests/merges.js'
import { ProtectedBranches } from '../../../../services/git/protection.js'
import { Reviews } from '../../../../services/git/merge-requests/reviews.js'
import { RepoLabels } from '../../../../services/git/labels.js'
import type { Repo } from '../../../../services/git/repositories.js'
import { tempDir, tempStore } from '../../../helper.js'

const ENV = { ...process.env, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', GIT_AUTHOR_NAME: 'Ann', GIT_AUTHOR_EMAIL: 'ann@example.com', GIT_COMMITTER_NAME: 'Ann', GIT_COMMITTER_EMAIL: 'ann@example.com' }

/** A bare repository and a working copy whose `commit` writes files on a branch and pushes it straight to the bare one. */
function repository (t: Test) {
  const dir = tempDir(t)
  const gitDir = join(dir, 'repo.git')
  const work = join(dir, 'work')
  const git = (args: string[], cwd = work, env: Record<string, string> = {}) => execFileSync('git', args, { cwd, env: { ...ENV, ...env } }).toString().trim()
  git(['init', '-q', '--bare', '-b', 'main', gitDir], dir)
  git(['init', '-q', '-b', 'main', work], dir)
  const commit = (branch: string, files: Record<string, string>, options: { from?: string, date?: string } = {}): string => {
    git(['checkout', '-q', '-B', branch, ...(options.from === undefined ? [] : [options.from])])
    for (const [path, content] of Object.entries(files)) {
      mkdirSync(join(work, path, '..'), { recursive: true })
      writeFileSync(join(work, path), content)
    }
    git(['add', '-A'])
    git(['commit', '-q', '-m', `on ${branch}: ${Object.keys(files).join(' ')}`], work, options.date === undefined ? {} : { GIT_AUTHOR_DATE: options.date })
    git(['push', '-q', '-f', gitDir, branch])
    return git(['rev-parse', 'HEAD'])
  }
  const now = new Date()
  const repo: Repo = { _id: 'repo1', projectId: 'p1', slug: 'repo', name: 'Repo', description: '', defaultBranch: 'main', visibility: 'private', createdBy: 'u1', createdAt: now, updatedAt: now, gitDir }
  return { gitDir, git, commit, repo }
}

const people = { merger: { name: 'Mel', email: 'mel@example.com' }, author: { name: 'Ann', email: 'ann@example.com' } }

t.test('plumbing: conflicts named whatever the file names, rebase keeps authors and dates, branches move by compare-and-swap', async (t) => {
  const { gitDir, git, commit } = repository(t)
  const plumbing = new MergePlumbing({ git: new GitCli(), reader: new RepoReader(), clock: new ManualClock(new Date('2026-01-02T03:04:05Z')) })
  const base = commit('main', { 'a file.txt': 'one\n', 'ünïcode.md': 'x\n', 'same.txt': '1\n2\n3\n' })
  const ours = commit('main', { 'a file.txt': 'ours\n', 'ünïcode.md': 'ours\n', 'same.txt': '1\n2\nthree\n' })
  const theirs = commit('topic', { 'a file.txt': 'theirs\n', 'ünïcode.md': 'theirs\n', 'same.txt': 'one\n2\n3\n' }, { from: base })
  t.same((await plumbing.mergeTree(gitDir, ours, theirs)).conflicts, ['a file.txt', 'ünïcode.md'], 'names come through -z unquoted; a file merged by lines is no conflict')
  t.equal(await plumbing.mergeBase(gitDir, ours, theirs), base)
  t.same(await plumbing.isAncestor(gitDir, base, ours), true)
  await t.rejects(plumbing.build(gitDir, { method: 'merge', target: ours, head: theirs, mergeBase: base, message: 'm', ...people }), { status: 409, code: 'APP_GIT_MR_CONFLICTS', details: { ids: ['a file.txt', 'ünïcode.md'] } })

  const side = commit('side', { 'b.txt': 'b\n' }, { from: base, date: '1600000000 +0200' })
  const sideTwo = commit('side', { 'same.txt': 'one\n2\n3\n' }, { date: '1600000100 -0500' })
  const input: MergeInput = { method: 'rebase', target: ours, head: sideTwo, mergeBase: base, message: 'unused', ...people }
  const rebased = await plumbing.build(gitDir, input)
  const log = git(['log', '--format=%P|%an|%ad|%cn|%cd|%s', '--date=raw', `${ours}..${rebased}`], gitDir).split('\n')
  t.equal(log.length, 2)
  t.match(log[1], new RegExp(`^${ours}\\|Ann\\|1600000000 \\+0200\\|Mel\\|1767323045 \\+0000\\|on side: b.txt$`), 'author, date and zone kept; the merger commits')
  t.match(log[0], /\|Ann\|1600000100 -0500\|Mel\|/)
  t.equal(git(['show', `${rebased}:same.txt`], gitDir), 'one\n2\nthree', 'each step is a three-way merge on the parent')
  t.equal(git(['rev-parse', `${side}^{tree}`], gitDir) === git(['rev-parse', `${rebased}^{tree}`], gitDir), false)

  await t.rejects(plumbing.moveBranch(gitDir, 'main', rebased, base, 'test'), { status: 409, code: 'APP_GIT_MR_TARGET_MOVED' }, 'the old value must hold')
  t.equal(git(['rev-parse', 'main'], gitDir), ours, 'and nothing moved')
  await plumbing.moveBranch(gitDir, 'main', rebased, ours, 'test')
  t.equal(git(['rev-parse', 'main'], gitDir), rebased)
  t.equal(await plumbing.deleteBranch(gitDir, 'side', side), false, 'a moved branch is kept')
  t.equal(await plumbing.deleteBranch(gitDir, 'side', sideTwo), true)
  t.equal(git(['fsck', '--strict', '--no-dangling', '--no-progress'], gitDir), '')
})

t.test('a push landing between building the merge and moving the target: 409, the push kept, the merge request still open', async (t) => {
  const { gitDir, git, commit, repo } = repository(t)
  const store = await tempStore(t)
  const clock = new ManualClock(new Date('2026-01-02T03:04:05Z'))
  const reader = new RepoReader()
  let racer: (() => void) | null = null
  class RacedPlumbing extends MergePlumbing {
    override async build (dir: string, input: MergeInput): Promise<string> {
      const built = await super.build(dir, input)
      racer?.()
      return built
    }
  }
  const plumbing = new RacedPlumbing({ git: new GitCli(), reader, clock })
  const reviews = new Reviews(store, { clock, newId })
  const labels = new RepoLabels(store, { clock, newId })
  const mergeRequests = new MergeRequests(store, { clock, newId, reader, merges: plumbing, reviews, labels, canRead: async () => true })
  const protection = new ProtectedBranches(store, { clock, newId })
  await Promise.all([reviews.init(), mergeRequests.init(), protection.init(), labels.init()])
  const merging = new MergeService({ reader, plumbing, mergeRequests, reviews, protection, signature: async () => people.merger })
  commit('main', { 'a.txt': 'a\n' })
  commit('topic', { 'b.txt': 'b\n' })
  const mr = await mergeRequests.create(repo, 'u1', { sourceBranch: 'topic', title: 'Topic' })
  let pushed = ''
  racer = () => { pushed = commit('main', { 'c.txt': 'pushed meanwhile\n' }, { from: 'main' }) }
  await t.rejects(merging.merge(repo, await mergeRequests.get(repo, mr.iid), { userId: 'u2', permissions: new Set(['git.read', 'git.write'] as const) }, { method: 'merge' }), { status: 409, code: 'APP_GIT_MR_TARGET_MOVED' })
  t.equal(git(['rev-parse', 'main'], gitDir), pushed, 'the concurrent push is never overwritten')
  t.equal((await mergeRequests.get(repo, mr.iid)).state, 'open')
  racer = null
  const merged = await merging.merge(repo, await mergeRequests.get(repo, mr.iid), { userId: 'u2', permissions: new Set(['git.read', 'git.write'] as const) }, { method: 'merge' })
  t.equal(git(['rev-parse', `${merged.commitSha}^1`], gitDir), pushed, 'retried, it merges onto the push')
  t.equal(merged.mergeRequest.state, 'merged')
})

t.test('one open merge request per pair of branches, held by a unique index: concurrent creates, reopen and retarget', async (t) => {
  const { commit, repo } = repository(t)
  const store = await tempStore(t)
  const clock = new ManualClock(new Date('2026-01-02T03:04:05Z'))
  const reader = new RepoReader()
  // The creates meet here, just before each looks for an open one: all of them look before any of them writes.
  let barrier: { waiting: number, size: number, release: () => void, reached: Promise<void> } | null = null
  class MeetingPlumbing extends MergePlumbing {
    override async isAncestor (dir: string, ancestor: string, descendant: string): Promise<boolean> {
      const answer = await super.isAncestor(dir, ancestor, descendant)
      if (barrier !== null && ++barrier.waiting === barrier.size) barrier.release()
      await barrier?.reached
      return answer
    }
  }
  const plumbing = new MeetingPlumbing({ git: new GitCli(), reader, clock })
  const labels = new RepoLabels(store, { clock, newId })
  const mergeRequests = new MergeRequests(store, { clock, newId, reader, merges: plumbing, reviews: new Reviews(store, { clock, newId }), labels, canRead: async () => true })
  await Promise.all([mergeRequests.init(), labels.init()])
  commit('main', { 'a.txt': 'a\n' })
  commit('topic', { 'b.txt': 'b\n' })
  commit('other', { 'c.txt': 'c\n' }, { from: 'main' })

  let release = (): void => {}
  const reached = new Promise<void>((resolve) => { release = resolve })
  barrier = { waiting: 0, size: 6, release, reached }
  const outcomes = await Promise.allSettled(Array.from({ length: 6 }, async () => await mergeRequests.create(repo, 'u1', { sourceBranch: 'topic', title: 'Topic' })))
  barrier = null
  const won = outcomes.filter((outcome) => outcome.status === 'fulfilled')
  t.equal(won.length, 1, 'one of six concurrent creates wins')
  const winner = (won[0] as PromiseFulfilledResult<Awaited<ReturnType<typeof mergeRequests.create>>>).value
  for (const outcome of outcomes) {
    if (outcome.status === 'rejected') t.match(outcome.reason, { status: 409, code: 'APP_GIT_MR_EXISTS', message: new RegExp(`!${winner.iid} is open already`), details: { ids: [winner._id], actual: winner.iid } })
  }
  const record = { ...winner, _id: 'copy', iid: 99 }
  await t.rejects(store.collection('git_merge_requests').insertOne(record), { code: 'APP_DUPLICATE_KEY', index: 'repoId_1_openPair_1' }, 'the index itself refuses a second open one, whatever the caller checked')

  const closed = await mergeRequests.close(await mergeRequests.get(repo, winner.iid), 'u1')
  t.equal(closed.openPair, closed._id, 'a closed one lets go of its branches')
  const third = await mergeRequests.create(repo, 'u2', { sourceBranch: 'topic', title: 'Again' })
  await t.rejects(mergeRequests.reopen(repo, await mergeRequests.get(repo, winner.iid)), { status: 409, code: 'APP_GIT_MR_EXISTS', details: { actual: third.iid } }, 'reopening while another holds the pair')
  await mergeRequests.close(await mergeRequests.get(repo, third.iid), 'u2')
  t.equal((await mergeRequests.reopen(repo, await mergeRequests.get(repo, winner.iid))).state, 'open')
  const elsewhere = await mergeRequests.create(repo, 'u1', { sourceBranch: 'topic', targetBranch: 'other', title: 'Elsewhere' })
  await t.rejects(mergeRequests.update(repo, await mergeRequests.get(repo, elsewhere.iid), { targetBranch: 'main' }), { status: 409, code: 'APP_GIT_MR_EXISTS', details: { actual: winner.iid } }, 'nor retargeting onto a pair that is held')
})

t.test('labels of merge requests are the repository\'s labels, held by id: renamed everywhere, removed on delete', async (t) => {
  const { commit, repo } = repository(t)
  const store = await tempStore(t)
  const clock = new ManualClock(new Date('2026-01-02T03:04:05Z'))
  const reader = new RepoReader()
  const labels = new RepoLabels(store, { clock, newId })
  const mergeRequests = new MergeRequests(store, { clock, newId, reader, merges: new MergePlumbing({ git: new GitCli(), reader, clock }), reviews: new Reviews(store, { clock, newId }), labels, canRead: async () => true })
  await Promise.all([mergeRequests.init(), labels.init()])
  labels.onDelete(async (target, labelId) => { await mergeRequests.dropLabel(target, labelId) })
  commit('main', { 'a.txt': 'a\n' })
  commit('topic', { 'b.txt': 'b\n' })
  const bug = await labels.create(repo, { name: 'Bug', color: '#D73A4A', description: ' broken ' })
  t.match(bug, { name: 'Bug', color: '#d73a4a', description: 'broken' })
  const ui = await labels.create(repo, { name: 'ui', color: '#000000' })
  await t.rejects(labels.create(repo, { name: 'BUG', color: '#000000' }), { status: 409, code: 'APP_GIT_LABEL_EXISTS' }, 'unique with letter case aside')
  await t.rejects(labels.create(repo, { name: '  ', color: '#000000' }), { status: 400, code: 'APP_GIT_LABEL_NAME_REQUIRED' })
  await t.rejects(mergeRequests.create(repo, 'u1', { sourceBranch: 'topic', title: 'x', labels: ['bug', 'nope', 'Later'] }), {
    status: 400,
    code: 'APP_GIT_LABEL_UNKNOWN',
    message: /"nope", "Later"/,
    details: { fields: [{ path: 'body.labels.1' }, { path: 'body.labels.2' }] }
  })
  const mr = await mergeRequests.create(repo, 'u1', { sourceBranch: 'topic', title: 'x', labels: ['bug', ' UI ', 'BUG'] })
  t.same(mr.labelIds, [bug.id, ui.id], 'each once, by id')
  t.same((await mergeRequests.view(mr)).labels, ['Bug', 'ui'])
  await labels.update(repo, bug.id, { name: 'defect' })
  t.same((await mergeRequests.view(await mergeRequests.get(repo, mr.iid))).labels, ['defect', 'ui'], 'a rename shows at once')
  t.same((await mergeRequests.list(repo, { label: 'DEFECT' })).items.map((item) => item.iid), [mr.iid], 'filtered by name, letter case aside')
  await t.rejects(labels.update(repo, ui.id, { name: 'Defect' }), { status: 409, code: 'APP_GIT_LABEL_EXISTS' })
  await t.rejects(labels.update(repo, 'nope', { color: '#ffffff' }), { status: 404, code: 'APP_GIT_LABEL_NOT_FOUND' })
  await labels.delete(repo, bug.id)
  t.same((await mergeRequests.get(repo, mr.iid)).labelIds, [ui.id], 'a deleted label leaves the merge requests')
  await t.rejects(labels.delete(repo, bug.id), { status: 404, code: 'APP_GIT_LABEL_NOT_FOUND' })
  t.same((await mergeRequests.list(repo, { label: 'defect' })).items, [])
  t.same((await labels.list(repo)).map((label) => label.name), ['ui'])
})
