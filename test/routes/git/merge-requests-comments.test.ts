import t from 'tap'
import { call } from '../../helper.js'
import { mrWorld } from './merge-requests-fixtures.js'

t.test('comments: general and inline, threads, resolve, outdated after a push; reactions', async (t) => {
  const world = await mrWorld(t)
  const { app, mrApi, owner, member, viewer } = world
  const base = await world.commit('main', { 'docs.md': 'one\ntwo\n' })
  const first = await world.commit('feature', { 'src/app.ts': 'a\nb\nc\n' }, { from: 'main' })
  const head = await world.commit('feature', { 'docs.md': 'one\ntwo\nthree\n' })
  const mainOnly = await world.commit('main', { 'main.txt': 'x\n' })
  await world.openMr({ sourceBranch: 'feature', title: 'Feature' })
  const commentsApi = `${mrApi}/1/comments`
  const post = async (body: Record<string, unknown>, auth = viewer.auth) => await call(app, 'POST', commentsApi, auth, body)

  const general = await post({ body: ' Looks good ' })
  t.equal(general.status, 201)
  t.equal(general.headers.location, `${commentsApi}/${general.body.data.id as string}`)
  t.match(general.body.data, { body: 'Looks good', authorId: viewer.id, replyTo: null, position: null, outdated: false, resolved: false })
  const onApp = await post({ body: 'Rename b', position: { path: 'src/app.ts', side: 'new', line: 2, startLine: 1, commitSha: head } })
  t.equal(onApp.status, 201, JSON.stringify(onApp.body))
  const onDocs = await post({ body: 'Good line', position: { path: 'docs.md', side: 'new', line: 3, commitSha: head } })
  t.equal((await post({ body: 'On the first commit', position: { path: 'src/app.ts', side: 'new', line: 3, commitSha: first } })).status, 201, 'any commit of the source')
  t.equal((await post({ body: 'Old side', position: { path: 'docs.md', side: 'old', line: 2, commitSha: base } })).status, 201, 'the merge base on the old side')
  const reply = await post({ body: 'Done', replyTo: onApp.body.data.id }, member.auth)
  t.equal(reply.body.data.replyTo, onApp.body.data.id)
  const nested = await post({ body: 'Thanks', replyTo: reply.body.data.id })
  t.equal(nested.body.data.replyTo, onApp.body.data.id, 'a reply to a reply joins the same thread')

  const position = (changes: Record<string, unknown>) => ({ body: 'x', position: { path: 'src/app.ts', side: 'new', line: 1, commitSha: head, ...changes } })
  const commentApi = (id: string) => `${commentsApi}/${id}`
  const cases: Array<[string, 'GET' | 'POST' | 'PATCH' | 'DELETE', string, Record<string, string>, unknown, number, string]> = [
    ['a commit outside the source', 'POST', commentsApi, viewer.auth, position({ commitSha: mainOnly }), 400, 'APP_GIT_COMMENT_POSITION'],
    ['an unknown commit', 'POST', commentsApi, viewer.auth, position({ commitSha: 'f'.repeat(40) }), 400, 'APP_GIT_COMMENT_POSITION'],
    ['a missing file', 'POST', commentsApi, viewer.auth, position({ path: 'nope.ts' }), 400, 'APP_GIT_COMMENT_POSITION'],
    ['a folder', 'POST', commentsApi, viewer.auth, position({ path: 'src' }), 400, 'APP_GIT_COMMENT_POSITION'],
    ['a path leaving the tree', 'POST', commentsApi, viewer.auth, position({ path: '../x' }), 400, 'APP_GIT_INVALID_PATH'],
    ['past the end of the file', 'POST', commentsApi, viewer.auth, position({ line: 4 }), 400, 'APP_GIT_COMMENT_POSITION'],
    ['a range backwards', 'POST', commentsApi, viewer.auth, position({ line: 1, startLine: 2 }), 400, 'APP_GIT_COMMENT_POSITION'],
    ['the old side on the head', 'POST', commentsApi, viewer.auth, position({ side: 'old' }), 400, 'APP_GIT_COMMENT_POSITION'],
    ['line zero', 'POST', commentsApi, viewer.auth, position({ line: 0 }), 400, 'APP_VALIDATION_FAILED'],
    ['an unknown side', 'POST', commentsApi, viewer.auth, position({ side: 'left' }), 400, 'APP_VALIDATION_FAILED'],
    ['a reply with a position', 'POST', commentsApi, viewer.auth, { ...position({}), replyTo: general.body.data.id }, 400, 'APP_GIT_COMMENT_REPLY_POSITION'],
    ['a reply to nothing', 'POST', commentsApi, viewer.auth, { body: 'x', replyTo: 'nope' }, 400, 'APP_GIT_COMMENT_UNKNOWN'],
    ['a blank comment', 'POST', commentsApi, viewer.auth, { body: '  ' }, 400, 'APP_GIT_COMMENT_EMPTY'],
    ['an outsider comments', 'POST', commentsApi, world.outsider.auth, { body: 'x' }, 404, 'APP_PROJECT_NOT_FOUND'],
    ['no credential', 'GET', commentsApi, {}, undefined, 401, 'APP_UNAUTHORIZED'],
    ['on an unknown merge request', 'POST', `${mrApi}/9/comments`, viewer.auth, { body: 'x' }, 404, 'APP_GIT_MR_NOT_FOUND'],
    ['edit another\'s comment', 'PATCH', commentApi(general.body.data.id), member.auth, { body: 'x' }, 403, 'APP_GIT_COMMENT_NOT_YOURS'],
    ['delete another\'s comment', 'DELETE', commentApi(general.body.data.id), member.auth, undefined, 403, 'APP_GIT_COMMENT_NOT_YOURS'],
    ['edit an unknown comment', 'PATCH', commentApi('nope'), member.auth, { body: 'x' }, 404, 'APP_GIT_COMMENT_NOT_FOUND'],
    ['resolve through a reply', 'POST', `${commentApi(reply.body.data.id)}/resolve`, member.auth, undefined, 400, 'APP_GIT_COMMENT_NOT_A_THREAD'],
    ['unresolve an open thread', 'POST', `${commentApi(onApp.body.data.id)}/unresolve`, member.auth, undefined, 409, 'APP_GIT_THREAD_STATE'],
    ['an unknown emoji', 'POST', `${mrApi}/1/reactions`, viewer.auth, { emoji: 'poop' }, 400, 'APP_VALIDATION_FAILED'],
    ['take back no reaction', 'DELETE', `${mrApi}/1/reactions?emoji=heart`, viewer.auth, undefined, 404, 'APP_GIT_REACTION_NOT_FOUND'],
    ['react to an unknown comment', 'POST', `${commentApi('nope')}/reactions`, viewer.auth, { emoji: 'heart' }, 404, 'APP_GIT_COMMENT_NOT_FOUND']
  ]
  for (const [name, method, url, headers, body, status, code] of cases) {
    const res = await call(app, method, url, headers, body)
    t.same([res.status, res.body.code], [status, code], name)
  }

  t.match((await call(app, 'PATCH', commentApi(general.body.data.id), viewer.auth, { body: 'Looks very good' })).body.data, { body: 'Looks very good' })
  t.match((await call(app, 'POST', `${commentApi(onApp.body.data.id)}/resolve`, member.auth)).body.data, { resolved: true, resolvedBy: member.id })
  t.same([(await call(app, 'POST', `${commentApi(onApp.body.data.id)}/resolve`, member.auth)).body.code], ['APP_GIT_THREAD_STATE'])
  t.match((await call(app, 'POST', `${commentApi(onApp.body.data.id)}/unresolve`, viewer.auth)).body.data, { resolved: false, resolvedBy: null })

  // A push that changes src/app.ts outdates the comments on it, not the one on docs.md.
  await world.commit('feature', { 'src/app.ts': 'a\nB\nc\n' })
  const listed = (await call(app, 'GET', commentsApi, viewer.auth)).body.data as Array<{ id: string, outdated: boolean }>
  const outdated = (id: string) => listed.find((comment) => comment.id === id)?.outdated
  t.equal(outdated(onApp.body.data.id), true, 'the file under it changed')
  t.equal(outdated(onDocs.body.data.id), false, 'its file did not change')
  t.equal(outdated(general.body.data.id), false)
  t.equal(listed.length, 7)

  const reactionsApi = `${mrApi}/1/reactions`
  await call(app, 'POST', reactionsApi, viewer.auth, { emoji: '+1' })
  const both = await call(app, 'POST', reactionsApi, member.auth, { emoji: '+1' })
  t.same(both.body.data, [{ emoji: '+1', count: 2, userIds: [viewer.id, member.id] }])
  t.same([(await call(app, 'POST', reactionsApi, member.auth, { emoji: '+1' })).body.code], ['APP_GIT_REACTION_EXISTS'])
  await call(app, 'POST', reactionsApi, owner.auth, { emoji: 'rocket' })
  t.same((await call(app, 'DELETE', `${reactionsApi}?emoji=%2B1`, viewer.auth)).body.data, [{ emoji: '+1', count: 1, userIds: [member.id] }, { emoji: 'rocket', count: 1, userIds: [owner.id] }])
  const onComment = await call(app, 'POST', `${commentApi(general.body.data.id)}/reactions`, member.auth, { emoji: 'heart' })
  t.same(onComment.body.data, [{ emoji: 'heart', count: 1, userIds: [member.id] }])
  t.same((await call(app, 'GET', `${commentApi(general.body.data.id)}/reactions`, viewer.auth)).body.data, onComment.body.data)
  t.same((await call(app, 'DELETE', `${commentApi(general.body.data.id)}/reactions?emoji=heart`, member.auth)).body.data, [])

  t.equal((await call(app, 'DELETE', commentApi(onApp.body.data.id), owner.auth)).status, 200, 'a git.admin holder may delete another\'s thread')
  t.equal((await call(app, 'GET', commentsApi, viewer.auth)).body.data.length, 4, 'its replies went with it')
})
