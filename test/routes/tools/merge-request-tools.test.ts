import t from 'tap'
import { call } from '../../helper.js'
import { mrWorld } from '../git/merge-requests-fixtures.js'
import { mcpClient, refusalOf } from './mcp-client.js'

t.test('merge request tools over MCP with the SDK client answer what their routes answer, and refuse as they refuse', async (t) => {
  const w = await mrWorld(t)
  const server = { app: w.app, base: `/api/projects/${w.projectId}/tracker` }
  const rest = async (method: 'GET' | 'POST', path: string, auth: Record<string, string>, body?: unknown) => await call(w.app, method, `${w.repoApi}${path}`, auth, body)
  await w.commit('feature', { 'a.txt': 'a\n' }, { from: 'main' })
  await w.commit('second', { 'b.txt': 'b\n' }, { from: 'main' })
  await w.commit('third', { 'c.txt': 'c\n' }, { from: 'main' })
  const member = await mcpClient(t, server, w.member.token)
  const viewer = await mcpClient(t, server, w.viewer.token)

  // Opening: the tool and the route each open one; the answers agree but for the number and the dates.
  const opened = await member.call('git_merge_request_create', { repoSlug: 'repo', mergeRequest: { sourceBranch: 'feature', title: 'Add a' } })
  t.notOk(opened.isError, JSON.stringify(opened.content))
  const viaRest = (await rest('POST', '/merge-requests', w.member.auth, { sourceBranch: 'second', title: 'Add b' })).body.data
  const comparable = ({ iid: _iid, id: _id, title: _title, sourceBranch: _s, headSha: _sha, createdAt: _c, updatedAt: _u, ...rest }: any) => rest
  t.same(comparable(opened.structuredContent), comparable(viaRest), 'the tool\'s answer has the route\'s shape and values')
  t.match(opened.structuredContent, { iid: 1, title: 'Add a', sourceBranch: 'feature', targetBranch: 'main', state: 'open', authorId: w.member.id })

  // Reading: the list, one, the comments, each the route's answer.
  t.same((await member.call('git_merge_requests_list', { repoSlug: 'repo' })).structuredContent, (await rest('GET', '/merge-requests', w.member.auth)).body.data)
  t.same((await member.call('git_merge_request_get', { repoSlug: 'repo', iid: 1 })).structuredContent, (await rest('GET', '/merge-requests/1', w.member.auth)).body.data)

  // Commenting needs git.read, as the route: the viewer comments.
  const comment = await viewer.call('git_merge_request_comment', { repoSlug: 'repo', iid: 1, comment: { body: 'Looks right' } })
  t.notOk(comment.isError, JSON.stringify(comment.content))
  t.match(comment.structuredContent, { body: 'Looks right', authorId: w.viewer.id })
  t.same((await member.call('git_merge_request_comments_list', { repoSlug: 'repo', iid: 1 })).structuredContent, { items: (await rest('GET', '/merge-requests/1/comments', w.member.auth)).body.data })

  // Refusals: the same code as the route for the same caller.
  const refusals: Array<[string, typeof member, string, object, 'GET' | 'POST', string, Record<string, string>, unknown]> = [
    ['a viewer opens', viewer, 'git_merge_request_create', { repoSlug: 'repo', mergeRequest: { sourceBranch: 'third', title: 'x' } }, 'POST', '/merge-requests', w.viewer.auth, { sourceBranch: 'third', title: 'x' }],
    ['a second one for the same branches', member, 'git_merge_request_create', { repoSlug: 'repo', mergeRequest: { sourceBranch: 'feature', title: 'again' } }, 'POST', '/merge-requests', w.member.auth, { sourceBranch: 'feature', title: 'again' }],
    ['an unknown branch', member, 'git_merge_request_create', { repoSlug: 'repo', mergeRequest: { sourceBranch: 'nope', title: 'x' } }, 'POST', '/merge-requests', w.member.auth, { sourceBranch: 'nope', title: 'x' }],
    ['an unknown number', member, 'git_merge_request_get', { repoSlug: 'repo', iid: 99 }, 'GET', '/merge-requests/99', w.member.auth, undefined],
    ['an empty comment', member, 'git_merge_request_comment', { repoSlug: 'repo', iid: 1, comment: { body: '' } }, 'POST', '/merge-requests/1/comments', w.member.auth, { body: '' }]
  ]
  for (const [name, client, tool, args, method, path, auth, body] of refusals) {
    const answer = await client.call(tool, args)
    t.equal(answer.isError, true, name)
    t.equal(refusalOf(answer).code, (await rest(method, path, auth, body)).body.code, name)
  }
  t.match(refusalOf(await viewer.call('git_merge_request_create', { repoSlug: 'repo', mergeRequest: { sourceBranch: 'third', title: 'x' } })), { code: 'APP_FORBIDDEN', details: { permission: 'git.write' } })
  t.notOk((await viewer.names()).includes('git_merge_request_create'), 'nor is the viewer offered it')

  await t.test('a role in one repository counts as the route counts it: offered, allowed there, refused elsewhere', async (t) => {
    await w.createRepo({ name: 'Other', readme: true })
    t.equal((await call(w.app, 'PUT', `${w.repoApi}/members/${w.viewer.id}`, w.owner.auth, { role: 'write' })).status, 200)
    t.ok((await viewer.names()).includes('git_merge_request_create'), 'the viewer with a write role in a repository is offered it')
    const mine = await viewer.call('git_merge_request_create', { repoSlug: 'repo', mergeRequest: { sourceBranch: 'third', title: 'Add c' } })
    t.notOk(mine.isError, JSON.stringify(mine.content))
    t.match(mine.structuredContent, { sourceBranch: 'third', authorId: w.viewer.id })
    const elsewhere = refusalOf(await viewer.call('git_merge_request_create', { repoSlug: 'other', mergeRequest: { sourceBranch: 'main', title: 'x' } }))
    const restElsewhere = (await call(w.app, 'POST', `${w.api}/repositories/other/merge-requests`, w.viewer.auth, { sourceBranch: 'main', title: 'x' })).body
    t.same([elsewhere.code, elsewhere.details?.permission], [restElsewhere.code, restElsewhere.details?.permission], 'no role there: refused as the route refuses')
    t.equal(elsewhere.code, 'APP_FORBIDDEN')
  })
})
