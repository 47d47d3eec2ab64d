import t from 'tap'
import { ManualClock } from '../../../services/platform/clock.js'
import { PlatformUsers } from '../../../services/identity/users.js'
import { RateLimiter } from '../../../services/platform/rate-limit.js'
import { DuplicateKeyError } from '../../../services/store/errors.js'
import { retryUpsertRace } from '../../../services/platform/upsert-race.js'
import { tempStore } from '../../helper.js'

t.test('retryUpsertRace runs an upsert that lost a race once more, and only for a duplicate key', async (t) => {
  const lostRace = new DuplicateKeyError('_rate_limits', '_id_', { _id: 'k' })
  let calls = 0
  t.equal(await retryUpsertRace(async () => { if (++calls === 1) throw lostRace; return 'updated' }), 'updated', 'the second run answers')
  t.equal(calls, 2)

  calls = 0
  await t.rejects(retryUpsertRace(async () => { calls++; throw lostRace }), lostRace, 'a second duplicate key is a real conflict')
  t.equal(calls, 2, 'never a third run')

  calls = 0
  const other = new Error('network')
  await t.rejects(retryUpsertRace(async () => { calls++; throw other }), other)
  t.equal(calls, 1, 'other errors are not retried')
  t.equal(await retryUpsertRace(async () => 'first time'), 'first time')
})

t.test('concurrent first hits of one rate-limit key make one counter that counts them all', async (t) => {
  const store = await tempStore(t)
  const limiter = new RateLimiter(store, new ManualClock())
  const rule = { max: 100, windowSeconds: 60 }
  await Promise.all(Array.from({ length: 8 }, async () => { await limiter.hit('login', '10.0.0.1', rule) }))
  const counters = await store.collection('_rate_limits').find({}).toArray()
  t.equal(counters.length, 1, 'one document')
  t.equal(counters[0].count, 8, 'every hit counted')
})

t.test('concurrent first SSO sign-ins of one address make one user, with no error', async (t) => {
  const store = await tempStore(t)
  const users = new PlatformUsers(store, new ManualClock())
  await users.init()
  const results = await Promise.all([
    users.findOrCreateByVerifiedEmail('Ada@Example.com', 'Ada'),
    users.findOrCreateByVerifiedEmail('ada@example.com', 'Ada L.')
  ])
  t.equal(results[0].user.id, results[1].user.id, 'both got the same user')
  t.equal(await store.collection('platform_users').countDocuments({ email: 'ada@example.com' }), 1)
})
