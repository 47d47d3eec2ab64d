import t, { type Test } from 'tap'
import { randomBytes } from 'node:crypto'
import { ManualClock } from '../../../services/platform/clock.js'
import { ProjectAuth } from '../../../services/projects/project-auth.js'
import { RefreshSessions } from '../../../services/identity/sessions.js'
import { createIdGenerator } from '../../../services/platform/ids.js'
import { ProjectTokens } from '../../../services/projects/project-tokens.js'
import { projectUsersOn, tempStore, testEngine } from '../../helper.js'

const TTL = 900

/** Project p1 with auth on, one end user and a fresh token of theirs. */
async function setup (t: Test) {
  const store = await tempStore(t, 'plinth-project-auth-')
  const clock = new ManualClock(Date.UTC(2026, 0, 1))
  const key = randomBytes(32)
  const { users, enable } = projectUsersOn(store, clock)
  const tokens = new ProjectTokens({ keyFor: () => key, clock, issuer: 'https://plinth.test', ttlSeconds: TTL })
  const sessions = new RefreshSessions(store, 'project_refresh_tokens', {
    clock, newId: createIdGenerator(() => clock.nowMs()), issueAccess: async (userId, _familyId, projectId, sessionEpoch) => await auth.issueAccess(userId, projectId ?? '', sessionEpoch), refreshTtlSeconds: 3600, reuseGraceSeconds: 10
  })
  const auth: ProjectAuth = new ProjectAuth({
    users,
    tokens,
    sessions,
    clock,
    findProject: async (id) => ({ id, authEnabled: true }),
    hiddenFromUsers: async () => new Set(),
    sweepDeleted: async () => {},
    requiresVerifiedEmail: async () => false
  })
  await enable('p1')
  const user = await users.register('p1', { email: 'ann@example.com', password: 'long enough 1' })
  const { token } = tokens.sign('p1', user.id)
  await new Promise((resolve) => setImmediate(resolve))
  return { store, clock, auth, user, token }
}

t.test('a remembered verify answer lasts no longer than its token', async (t) => {
  const { clock, auth, user, token } = await setup(t)
  t.match(await auth.verify('p1', token), { valid: true, user: { id: user.id } })
  clock.advance(TTL * 1000 - 1)
  t.match(await auth.verify('p1', token), { valid: true }, 'a millisecond before it expires')
  clock.advance(1)
  t.same(await auth.verify('p1', token), { valid: false }, 'expired, though nothing in the Store changed')
  t.same(await auth.verify('p2', token), { valid: false }, 'another project')
})

t.test('verify answers follow the user record: one frozen answer while it is unchanged, a new one after any change', async (t) => {
  const { store, auth, user, token } = await setup(t)
  const answer = await auth.verify('p1', token)
  t.ok(Object.isFrozen(answer))
  // One answer object per document state comes from the embedded engine's shared frozen documents; MongoDB's driver
  // returns a fresh document per read, so there the answers are equal, not identical.
  const same = testEngine === 'sqlite' ? t.equal.bind(t) : t.same.bind(t)
  same(await auth.verify('p1', token), answer, 'the same answer object while the user record is unchanged')
  const sameTail = `${token.slice(0, 20)}x${token.slice(21)}`
  t.same(await auth.verify('p1', sameTail), { valid: false }, 'a tampered token is refused in full')
  await store.collection('elsewhere').insertOne({ n: 1 })
  same(await auth.verify('p1', token), answer, 'a write to an unrelated collection keeps it')
  await store.collection('p_p1__users').updateOne({ _id: user.id }, { $set: { team: 'blue' } })
  t.match(await auth.verify('p1', token), { valid: true, user: { team: 'blue' } }, 'a change to the user is seen at once')
  await store.collection('p_p1__users').updateOne({ _id: user.id }, { $set: { disabled: true } })
  t.same(await auth.verify('p1', token), { valid: false }, 'and so is disabling them')
})
