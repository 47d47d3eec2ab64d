import t from 'tap'
import { call } from '../../helper.js'
import { mrWorld } from './merge-requests-fixtures.js'

t.test('a branch frozen against pushes takes no merges either, unless its rule says merge explicitly', async (t) => {
  const world = await mrWorld(t)
  const { app, mrApi, owner, member } = world
  const rulesApi = `${world.repoApi}/protected-branches`
  await world.commit('work', { 'work.txt': 'mine\n' }, { from: 'main' })
  t.equal((await world.openMr({ sourceBranch: 'work', title: 'Mine' }, member.auth)).status, 201, 'a git.write member opens their own merge request')
  const mergeAs = async (auth: Record<string, string>) => await call(app, 'POST', `${mrApi}/1/merge`, auth, {})
  const blockers = async () => (await call(app, 'GET', `${mrApi}/1/merge-check`, member.auth)).body.data.blockers.map((blocker: { code: string }) => blocker.code)

  const frozen = await call(app, 'POST', rulesApi, owner.auth, { pattern: 'main', push: 'nobody' })
  t.match(frozen.body.data, { push: 'nobody', merge: 'nobody', mergeExplicit: false }, 'the rule answers the merge level as enforced')
  const ruleApi = `${rulesApi}/${frozen.body.data.id as string}`
  t.same(await blockers(), ['branch_protected'])
  const refused = await mergeAs(member.auth)
  t.same([refused.status, refused.body.code], [403, 'APP_GIT_BRANCH_PROTECTED'], 'push: nobody freezes merges')
  t.match(refused.body.message, /nobody may merge/)
  t.same([(await mergeAs(owner.auth)).body.code], ['APP_GIT_BRANCH_PROTECTED'], 'for admins too')

  t.match((await call(app, 'PUT', ruleApi, owner.auth, { push: 'admin' })).body.data, { push: 'admin', merge: 'admin', mergeExplicit: false })
  const adminOnly = await mergeAs(member.auth)
  t.same([adminOnly.status, adminOnly.body.code], [403, 'APP_GIT_BRANCH_PROTECTED'], 'push: admin keeps writers from merging')
  t.match(adminOnly.body.message, /only git\.admin holders may merge/)

  // A rule stored before the flag existed held the old default `merge: write`: it reads as following push.
  await app.store.collection('git_protected_branches').updateOne({ _id: frozen.body.data.id }, { $set: { push: 'nobody', merge: 'write' }, $unset: { mergeExplicit: '' } })
  t.match((await call(app, 'GET', rulesApi, world.viewer.auth)).body.data[0], { push: 'nobody', merge: 'nobody', mergeExplicit: false })
  t.same([(await mergeAs(member.auth)).body.code], ['APP_GIT_BRANCH_PROTECTED'], 'a legacy rule freezes merges too')

  const explicit = await call(app, 'PUT', ruleApi, owner.auth, { merge: 'write' })
  t.match(explicit.body.data, { push: 'nobody', merge: 'write', mergeExplicit: true }, 'a looser merge written explicitly is kept')
  t.match((await call(app, 'PUT', ruleApi, owner.auth, { allowDelete: false })).body.data, { merge: 'write', mergeExplicit: true }, 'and survives other changes')
  t.match((await call(app, 'PUT', ruleApi, owner.auth, { merge: null })).body.data, { push: 'nobody', merge: 'nobody', mergeExplicit: false }, 'null follows push again')
  t.match((await call(app, 'PUT', ruleApi, owner.auth, { merge: 'write' })).body.data, { mergeExplicit: true })
  const merged = await mergeAs(member.auth)
  t.equal(merged.status, 200, JSON.stringify(merged.body))
  t.equal(merged.body.data.mergeRequest.state, 'merged', 'changes reach the frozen branch only through merge requests')

  const created = await call(app, 'POST', rulesApi, owner.auth, { pattern: 'release/*', push: 'admin', merge: 'write' })
  t.match(created.body.data, { push: 'admin', merge: 'write', mergeExplicit: true }, 'explicit on create too')
  t.match((await call(app, 'POST', rulesApi, owner.auth, { pattern: 'hotfix/*' })).body.data, { push: 'write', merge: 'write', mergeExplicit: false })
})
