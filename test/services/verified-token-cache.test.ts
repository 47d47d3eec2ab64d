import t from 'tap'
import { ManualClock } from '../../services/clock.js'
import { VerifiedTokenCache, tokenKey } from '../../services/verified-token-cache.js'

t.test('a remembered token is served until its expiry, then forgotten', async (t) => {
  const clock = new ManualClock(Date.UTC(2026, 0, 1))
  const cache = new VerifiedTokenCache<{ sub: string, exp?: number }>(clock)
  const exp = clock.nowMs() / 1000 + 60
  cache.remember('token-a', { sub: 'u1', exp })
  t.same(cache.get('token-a'), { sub: 'u1', exp })
  t.equal(cache.get('token-a '), undefined, 'only the exact same string hits')
  clock.advance(59_999)
  t.ok(cache.get('token-a'), 'still valid a millisecond before expiry')
  clock.advance(1)
  t.equal(cache.get('token-a'), undefined, 'expired at exp')
  clock.advance(-10_000)
  t.equal(cache.get('token-a'), undefined, 'an expired entry was dropped, not kept for a clock step back')
})

t.test('tokens without an expiry are never cached, and the oldest entry makes room', async (t) => {
  const clock = new ManualClock()
  const cache = new VerifiedTokenCache<{ sub: string, exp?: number }>(clock, 2)
  cache.remember('forever', { sub: 'u0' })
  t.equal(cache.get('forever'), undefined)
  const exp = clock.nowMs() / 1000 + 60
  cache.remember('one', { sub: 'u1', exp })
  cache.remember('two', { sub: 'u2', exp })
  cache.remember('three', { sub: 'u3', exp })
  t.equal(cache.get('one'), undefined, 'evicted')
  t.equal(cache.get('two')?.sub, 'u2')
  t.equal(cache.get('three')?.sub, 'u3')
})

t.test('long tokens are found by their tail but hit only as the exact same whole token', async (t) => {
  const clock = new ManualClock()
  const cache = new VerifiedTokenCache<{ sub: string, exp?: number }>(clock)
  const exp = clock.nowMs() / 1000 + 60
  const signature = 'S'.repeat(43)
  const token = `header.${'a'.repeat(200)}.${signature}`
  const forged = `header.${'b'.repeat(200)}.${signature}`
  cache.remember(token, { sub: 'ann', exp })
  t.equal(cache.get(forged), undefined, 'another token with the same tail misses')
  t.equal(cache.get(token)?.sub, 'ann', 'a fresh copy of the token hits')
  t.equal(cache.get((' ' + token).slice(1))?.sub, 'ann')
  cache.remember(forged, { sub: 'bob', exp })
  t.equal(cache.get(forged)?.sub, 'bob', 'a token sharing the tail replaces the entry')
  t.equal(cache.get(token), undefined, 'and the first one is then verified again, never answered as the other')
  t.equal(tokenKey('short'), 'short')
  t.equal(tokenKey(token), signature.slice(-24))
})
