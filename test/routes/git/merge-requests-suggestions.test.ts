import t from 'tap'
import { call } from '../../helper.js'
import { replaceLines, suggestionOf } from '../../../services/git/merge-requests/suggestions.js'
import { mrWorld } from './merge-requests-fixtures.js'

t.test('suggestion blocks and line replacement', async (t) => {
  t.same(suggestionOf('Try:\n```suggestion\nconst a = 1\nconst b = 2\n```\nthanks'), ['const a = 1', 'const b = 2'])
  t.same(suggestionOf('```suggestion:-0+0\n```'), [], 'an empty block deletes the lines')
  t.equal(suggestionOf('```ts\nx\n```'), null)
  t.equal(replaceLines('a\nb\nc\n', 2, 2, ['B']), 'a\nB\nc\n')
  t.equal(replaceLines('a\nb\nc', 1, 2, ['x', 'y', 'z']), 'x\ny\nz\nc', 'no final newline stays without one')
  t.equal(replaceLines('a\nb\n', 1, 2, []), '')
})

t.test('suggestions applied singly and in a batch, as one commit by the suggester', async (t) => {
  const world = await mrWorld(t)
  const { app, mrApi, owner, member, viewer } = world
  await world.commit('feature', { 'src/app.ts': 'one\ntwo\nthree\nfour\n', 'notes.md': 'alpha\nbeta\n' }, { from: 'main' })
  const head = await world.commit('feature', { 'extra.txt': 'x\n' })
  await world.openMr({ sourceBranch: 'feature', title: 'Feature' }, owner.auth)
  const commentsApi = `${mrApi}/1/comments`
  // Suggestions are made on the source head of the moment, as a reviewer looking at the merge request would.
  const suggest = async (auth: Record<string, string>, path: string, line: number, lines: string, startLine?: number) => {
    const commitSha = (await call(app, 'GET', `${mrApi}/1`, auth)).body.data.headSha as string
    return (await call(app, 'POST', commentsApi, auth, { body: `Better:\n\`\`\`suggestion\n${lines}\`\`\``, position: { path, side: 'new', line, commitSha, ...(startLine === undefined ? {} : { startLine }) } })).body.data.id as string
  }
  const single = await suggest(viewer.auth, 'src/app.ts', 2, 'TWO\n')
  const applyApi = `${mrApi}/1/suggestions/apply`
  const applied = await call(app, 'POST', applyApi, member.auth, { commentIds: [single] })
  t.equal(applied.status, 200, JSON.stringify(applied.body))
  const first = applied.body.data.commitSha as string
  t.equal(applied.body.data.mergeRequest.headSha, first, 'the source moved to the new commit')
  const repo = await world.repo()
  const show = async (args: string[]) => (await world.git.run(['--git-dir', repo.gitDir, ...args])).stdout
  t.equal(await show(['log', '-1', '--format=%P|%an|%ae|%cn|%s', first]), `${head}|viewer|viewer@example.com|member|Apply a suggestion from merge request !1\n`)
  t.equal(await show(['show', `${first}:src/app.ts`]), 'one\nTWO\nthree\nfour\n')

  const again = await call(app, 'POST', applyApi, member.auth, { commentIds: [single] })
  t.same([again.status, again.body.code], [409, 'APP_GIT_SUGGESTION_APPLIED'])
  const listed = (await call(app, 'GET', commentsApi, viewer.auth)).body.data
  t.equal(listed.find((comment: { id: string }) => comment.id === single).appliedIn, first)

  const range = await suggest(viewer.auth, 'src/app.ts', 4, 'THREE AND FOUR\n', 3)
  const notes = await suggest(owner.auth, 'notes.md', 1, 'ALPHA\n')
  const batch = await call(app, 'POST', applyApi, member.auth, { commentIds: [range, notes], message: 'Apply review suggestions' })
  t.equal(batch.status, 200, JSON.stringify(batch.body))
  const second = batch.body.data.commitSha as string
  t.equal(await show(['log', '-1', '--format=%P|%an|%cn|%B', second]), `${first}|viewer|member|Apply review suggestions\n\nCo-authored-by: owner <owner@example.com>\n\n`, 'one commit, the first suggester its author, the others co-authors')
  t.equal(await show(['show', `${second}:src/app.ts`]), 'one\nTWO\nTHREE AND FOUR\n')
  t.equal(await show(['show', `${second}:notes.md`]), 'ALPHA\nbeta\n')

  const plain = (await call(app, 'POST', commentsApi, viewer.auth, { body: 'No suggestion here' })).body.data.id as string
  const a = await suggest(viewer.auth, 'notes.md', 2, 'B\n', 1)
  const b = await suggest(viewer.auth, 'notes.md', 2, 'b\n')
  const onApp = await suggest(viewer.auth, 'src/app.ts', 1, 'ONE\n')
  await world.commit('feature', { 'src/app.ts': 'rewritten\n' })
  const cases: Array<[string, Record<string, string>, unknown, number, string]> = [
    ['a comment without a suggestion', member.auth, { commentIds: [plain] }, 400, 'APP_GIT_NO_SUGGESTION'],
    ['overlapping suggestions', member.auth, { commentIds: [a, b] }, 400, 'APP_GIT_SUGGESTIONS_OVERLAP'],
    ['an unknown comment', member.auth, { commentIds: ['nope'] }, 404, 'APP_GIT_COMMENT_NOT_FOUND'],
    ['the file changed since', member.auth, { commentIds: [onApp] }, 409, 'APP_GIT_SUGGESTION_OUTDATED'],
    ['no comments', member.auth, { commentIds: [] }, 400, 'APP_VALIDATION_FAILED'],
    ['a viewer applies', viewer.auth, { commentIds: [a] }, 403, 'APP_FORBIDDEN'],
    ['an outsider applies', world.outsider.auth, { commentIds: [a] }, 404, 'APP_PROJECT_NOT_FOUND']
  ]
  for (const [name, auth, body, status, code] of cases) {
    const res = await call(app, 'POST', applyApi, auth, body)
    t.same([res.status, res.body.code], [status, code], name)
  }
  t.equal((await call(app, 'POST', applyApi, member.auth, { commentIds: [b] })).status, 200, 'a suggestion on a file the push left alone still applies')
  const c = await suggest(viewer.auth, 'notes.md', 1, 'x\n')
  await call(app, 'POST', `${world.repoApi}/protected-branches`, owner.auth, { pattern: 'feature', push: 'admin' })
  const guarded = await call(app, 'POST', applyApi, member.auth, { commentIds: [c] })
  t.same([guarded.status, guarded.body.code], [403, 'APP_GIT_BRANCH_PROTECTED'], 'applying is a push to the source')
  t.equal((await world.git.run(['--git-dir', repo.gitDir, 'fsck', '--strict', '--no-dangling', '--no-progress'])).code, 0)
})
