import t, { type Test } from 'tap'
import { ManualClock } from '../../../services/platform/clock.js'
import type { OrgAccess } from '../../../services/orgs/resolver.js'
import type { AppError } from '../../../services/platform/errors.js'
import { orgsOn, tempStore } from '../../helper.js'

async function setup (t: Test) {
  const store = await tempStore(t, 'plinth-orgs-')
  const clock = new ManualClock()
  return { store, clock, ...await orgsOn(store, clock) }
}

t.test('two owners demoting each other at once leave exactly one owner', async (t) => {
  const { organizations, users, resolver } = await setup(t)
  const a = await users.register({ email: 'a@example.com', password: 'correct horse battery', name: 'A' })
  const b = await users.register({ email: 'b@example.com', password: 'correct horse battery', name: 'B' })
  const org = await organizations.create({ userId: a.id }, { name: 'Race' })
  const asA = await resolver.access(org.id, { userId: a.id }) as OrgAccess
  await organizations.addMember(asA, { userId: b.id, role: 'owner' })
  const asB = await resolver.access(org.id, { userId: b.id }) as OrgAccess
  const outcomes = await Promise.allSettled([
    organizations.changeRole(asA, b.id, 'admin'),
    organizations.changeRole(asB, a.id, 'admin')
  ])
  const owners = (await organizations.listMembers(org.id)).filter((m) => m.role === 'owner')
  t.equal(owners.length, 1, 'one owner remains')
  t.equal(outcomes.filter((o) => o.status === 'fulfilled').length, 1, 'one demotion landed')
  const failure = outcomes.find((o) => o.status === 'rejected') as PromiseRejectedResult
  t.equal((failure.reason as AppError).code, 'APP_LAST_OWNER')
  const record = await organizations.records.findOne({ _id: org.id })
  t.equal(record?.ownerCount, 1, 'the owner count matches the members')
})
