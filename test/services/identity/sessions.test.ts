import t, { type Test } from 'tap'
import { ManualClock } from '../../../services/platform/clock.js'
import { createIdGenerator } from '../../../services/platform/ids.js'
import { RefreshSessions, type AccessIssuer } from '../../../services/identity/sessions.js'
import { tempStore } from '../../helper.js'

/**
 * RefreshSessions on its own: rotation, the grace window's single trade, a
 * revocation racing a grace trade, and the session epoch a family was started
 * under. The issuer is a plain function of an epoch table, as the real ones
 * are of a user's record; `hold` lets a test stop an issue half-way.
 */
async function setup (t: Test) {
  const store = await tempStore(t, 'plinth-sessions-')
  const clock = new ManualClock(Date.UTC(2026, 0, 1))
  const epochs = new Map<string, number>([['ann', 0]])
  let hold: Promise<void> | null = null
  const issueAccess: AccessIssuer = async (userId, familyId, _scope, sessionEpoch) => {
    if (hold !== null) await hold
    const current = epochs.get(userId)
    if (current === undefined || (sessionEpoch !== undefined && sessionEpoch !== current)) return null
    return { accessToken: `${userId}.${familyId}.${current}`, expiresIn: 900, sessionEpoch: current }
  }
  const sessions = new RefreshSessions(store, 'refresh_tokens', { clock, newId: createIdGenerator(() => clock.nowMs()), issueAccess, refreshTtlSeconds: 3600, reuseGraceSeconds: 10 })
  await sessions.init()
  const holdIssues = (): (() => void) => {
    let release = (): void => {}
    hold = new Promise<void>((resolve) => { release = () => { hold = null; resolve() } })
    return release
  }
  return { sessions, clock, epochs, holdIssues }
}

const refused = { status: 401, code: 'APP_INVALID_REFRESH_TOKEN' }

t.test('a retired token is traded once within the grace window; a second trade ends the family', async (t) => {
  const { sessions } = await setup(t)
  const first = await sessions.start('ann')
  const next = await sessions.refresh(first.refreshToken)
  const sibling = await sessions.refresh(first.refreshToken)
  t.equal(sibling.userId, 'ann', 'the double submit gets its answer')
  await t.rejects(sessions.refresh(first.refreshToken), refused, 'a third trade of the same retired token is a copy')
  await t.rejects(sessions.refresh(next.refreshToken), refused, 'and the family is revoked')
  await t.rejects(sessions.refresh(sibling.refreshToken), refused, 'sibling included')
})

t.test('a logout that lands while a grace trade is on its way takes the sibling with it', async (t) => {
  const { sessions, holdIssues } = await setup(t)
  const first = await sessions.start('ann')
  const next = await sessions.refresh(first.refreshToken)
  const release = holdIssues()
  const trade = sessions.refresh(first.refreshToken).then(() => 'issued', (error: { code?: string }) => error.code)
  await new Promise((resolve) => setImmediate(resolve))
  await sessions.logout(next.refreshToken)
  release()
  t.equal(await trade, 'APP_INVALID_REFRESH_TOKEN', 'the trade is refused')
  const fresh = await sessions.start('ann')
  t.ok(fresh.refreshToken, 'other sessions are unaffected')
})

t.test('a family lives only under the session epoch it was started with', async (t) => {
  const { sessions, epochs } = await setup(t)
  const session = await sessions.start('ann', null, 0)
  epochs.set('ann', 1)
  await t.rejects(sessions.refresh(session.refreshToken), refused, 'the epoch moved: its refresh is refused')
  await t.rejects(sessions.start('ann', null, 0), refused, 'a login checked against the old password cannot start one')
  const now = await sessions.start('ann', null, 1)
  t.match(await sessions.refresh(now.refreshToken), { userId: 'ann', accessToken: /\.1$/ }, 'one started under the current epoch refreshes')
  t.match(await sessions.start('ann'), { accessToken: /\.1$/ }, 'without an epoch, the current one')
})

t.test('the grace window closes: a replay after it revokes the family', async (t) => {
  const { sessions, clock } = await setup(t)
  const first = await sessions.start('ann')
  const next = await sessions.refresh(first.refreshToken)
  clock.advance(10_001)
  await t.rejects(sessions.refresh(first.refreshToken), refused)
  await t.rejects(sessions.refresh(next.refreshToken), refused, 'revoked with it')
})
