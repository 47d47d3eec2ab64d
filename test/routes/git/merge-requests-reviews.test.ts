import t from 'tap'
import { call } from '../../helper.js'
import { mrWorld } from './merge-requests-fixtures.js'

t.test('merge-check lists every blocker at once; reviews give and lose approvals', async (t) => {
  const world = await mrWorld(t)
  const { app, mrApi, owner, member, viewer } = world
  const rule = await call(app, 'POST', `${world.repoApi}/protected-branches`, owner.auth, { pattern: 'main', merge: 'admin', requiredApprovals: 1 })
  t.match(rule.body.data, { merge: 'admin', requiredApprovals: 1 })
  await world.commit('main', { 'README.md': '# ours\n' })
  const head = await world.commit('work', { 'README.md': '# theirs\n' }, { from: 'main~1' })
  await world.openMr({ sourceBranch: 'work', title: 'Work', draft: true })
  const codes = async (auth: Record<string, string>, query = '') => (await call(app, 'GET', `${mrApi}/1/merge-check${query}`, auth)).body.data.blockers.map((blocker: { code: string }) => blocker.code)
  t.same(await codes(member.auth, `?expectedHeadSha=${'0'.repeat(40)}`), ['branch_protected', 'draft', 'stale_head', 'conflicts', 'approvals'], 'all at once, for a writer')
  t.same(await codes(viewer.auth), ['permission', 'draft', 'conflicts', 'approvals'], 'a viewer may check but not merge')
  t.same(await codes(owner.auth), ['draft', 'conflicts', 'approvals'], 'an admin may merge into the protected branch')
  const refused = await call(app, 'POST', `${mrApi}/1/merge`, member.auth, {})
  t.same([refused.status, refused.body.code], [403, 'APP_GIT_BRANCH_PROTECTED'])
  t.match(refused.body.message, /also: .*draft.*conflict.*1 approval required, 0 given/, 'the refusal names every blocker')
  t.same([(await call(app, 'POST', `${mrApi}/1/merge`, owner.auth, {})).body.code], ['APP_GIT_MR_DRAFT'])

  // Resolve the conflict on the source and mark it ready: only approvals remain.
  await world.commit('work', { 'README.md': '# ours\n', 'extra.txt': 'x\n' }, { from: 'work' })
  await call(app, 'PATCH', `${mrApi}/1`, member.auth, { draft: false })
  t.same(await codes(owner.auth), ['approvals'])
  t.same((await call(app, 'POST', `${mrApi}/1/merge`, owner.auth, {})).body.code, 'APP_GIT_MR_APPROVALS_REQUIRED')

  const reviewsApi = `${mrApi}/1/reviews`
  const cases: Array<[string, Record<string, string>, unknown, number, string]> = [
    ['the author approves', member.auth, { state: 'approved' }, 403, 'APP_GIT_MR_SELF_REVIEW'],
    ['a viewer approves', viewer.auth, { state: 'approved' }, 403, 'APP_FORBIDDEN'],
    ['an outsider approves', world.outsider.auth, { state: 'approved' }, 404, 'APP_PROJECT_NOT_FOUND'],
    ['changes without a word', owner.auth, { state: 'changes_requested' }, 400, 'APP_GIT_REVIEW_BODY_REQUIRED'],
    ['an unknown state', owner.auth, { state: 'lgtm' }, 400, 'APP_VALIDATION_FAILED']
  ]
  for (const [name, auth, body, status, code] of cases) {
    const res = await call(app, 'POST', reviewsApi, auth, body)
    t.same([res.status, res.body.code], [status, code], name)
  }
  t.equal((await call(app, 'POST', reviewsApi, member.auth, { state: 'commented', body: 'Ready for a look' })).status, 201, 'the author may comment')
  const changes = await call(app, 'POST', reviewsApi, owner.auth, { state: 'changes_requested', body: 'Rename extra.txt' })
  t.equal(changes.status, 201)
  t.equal(changes.headers.location, `${reviewsApi}/${changes.body.data.id as string}`, 'Location names the review')
  t.same(await codes(owner.auth), ['approvals', 'changes_requested'])
  const approval = await call(app, 'POST', reviewsApi, owner.auth, { state: 'approved' })
  t.match(approval.body.data, { state: 'approved', stale: false, dismissed: false, authorId: owner.id })
  t.same(await codes(owner.auth), [], 'the latest review of a reviewer counts')
  const check = (await call(app, 'GET', `${mrApi}/1/merge-check`, owner.auth)).body.data
  t.same(check.approvals, { required: 1, given: 1 })

  // A push to the source makes the approval stale.
  const moved = await world.commit('work', { 'extra.txt': 'y\n' })
  t.not(moved, head)
  t.same(await codes(owner.auth), ['approvals'], 'stale after a push')
  t.match((await call(app, 'GET', reviewsApi, viewer.auth)).body.data.find((review: { id: string }) => review.id === approval.body.data.id), { stale: true, commitSha: approval.body.data.commitSha })
  const fresh = await call(app, 'POST', reviewsApi, owner.auth, { state: 'approved' })
  t.equal(fresh.body.data.commitSha, moved)
  t.same(await codes(owner.auth), [])

  const dismissApi = `${reviewsApi}/${fresh.body.data.id as string}/dismiss`
  t.same([(await call(app, 'POST', dismissApi, member.auth)).body.code], ['APP_FORBIDDEN'], 'dismissing needs git.admin')
  t.same([(await call(app, 'POST', `${reviewsApi}/nope/dismiss`, owner.auth)).body.code], ['APP_GIT_REVIEW_NOT_FOUND'])
  const dismissed = await call(app, 'POST', dismissApi, owner.auth)
  t.match(dismissed.body.data, { dismissed: true, dismissedBy: owner.id })
  t.same(await codes(owner.auth), ['approvals'], 'a dismissed approval no longer counts')
  await call(app, 'POST', reviewsApi, owner.auth, { state: 'approved' })
  const merged = await call(app, 'POST', `${mrApi}/1/merge`, owner.auth, { method: 'squash' })
  t.equal(merged.status, 200, JSON.stringify(merged.body))
  t.same([(await call(app, 'POST', reviewsApi, owner.auth, { state: 'approved' })).body.code], ['APP_GIT_MR_NOT_OPEN'])
})
