import t from 'tap'
import { createHmac, randomBytes } from 'node:crypto'
import { createSigner } from 'fast-jwt'
import { ManualClock } from '../../../services/platform/clock.js'
import { ProjectTokens, projectAudience } from '../../../services/projects/project-tokens.js'

const ISSUER = 'https://plinth.test'
const TTL = 900
const keys = new Map<string, Buffer>()
const keyOf = (projectId: string): Buffer => {
  let key = keys.get(projectId)
  if (key === undefined) { key = randomBytes(32); keys.set(projectId, key) }
  return key
}

function setup (keyFor: (projectId: string) => Buffer = keyOf) {
  const clock = new ManualClock(Date.UTC(2026, 0, 1))
  const tokens = new ProjectTokens({ keyFor, clock, issuer: ISSUER, ttlSeconds: TTL })
  return { clock, tokens }
}

const b64 = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url')
const decodePayload = (token: string): Record<string, unknown> => JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString('utf8'))

/** Signed by hand with the project's key, so each claim can be set to anything, including what a signer would refuse. */
function forge (projectId: string, claims: Record<string, unknown>, algorithm: 'HS256' | 'HS512' = 'HS256'): string {
  const input = `${b64({ alg: algorithm, typ: 'JWT' })}.${b64(claims)}`
  return `${input}.${createHmac(algorithm === 'HS256' ? 'sha256' : 'sha512', keyOf(projectId)).update(input).digest('base64url')}`
}

function goodClaims (clock: ManualClock, projectId: string): Record<string, unknown> {
  const iat = Math.floor(clock.nowMs() / 1000)
  return { sub: 'user-1', pid: projectId, type: 'project', aud: projectAudience(projectId), iss: ISSUER, iat, exp: iat + TTL }
}

t.test('sign issues an HS256 JWT with the project claims, expiring by the clock', async (t) => {
  const { clock, tokens } = setup()
  const signed = tokens.sign('proj-a', 'user-1')
  const [header] = signed.token.split('.')
  t.same(JSON.parse(Buffer.from(header, 'base64url').toString('utf8')), { alg: 'HS256', typ: 'JWT' })
  const iat = Date.UTC(2026, 0, 1) / 1000
  t.same(decodePayload(signed.token), { sub: 'user-1', pid: 'proj-a', type: 'project', aud: 'plinth:project:proj-a', iss: ISSUER, iat, exp: iat + TTL })
  t.equal(signed.expiresIn, TTL)
  t.equal(signed.expiresAt, '2026-01-01T00:15:00.000Z')
  t.match(tokens.verify('proj-a', signed.token), { userId: 'user-1', sessionEpoch: 0 }, 'the user and the session epoch it was issued under')

  clock.advance(TTL * 1000 - 1)
  t.match(tokens.verify('proj-a', signed.token), { userId: 'user-1' }, 'valid a millisecond before exp')
  clock.advance(1)
  t.equal(tokens.verify('proj-a', signed.token), null, 'expired at exp, although it was verified (and cached) before')
  clock.advance(-60_000)
  t.match(tokens.verify('proj-a', signed.token), { userId: 'user-1' }, 'the clock alone decides, not the wall time')
})

t.test('a token signed later carries the later clock', async (t) => {
  const { clock, tokens } = setup()
  clock.advance(3_600_500)
  const signed = tokens.sign('proj-a', 'user-2')
  t.equal(decodePayload(signed.token).iat, Date.UTC(2026, 0, 1, 1) / 1000)
  t.equal(signed.expiresAt, '2026-01-01T01:15:00.000Z')
})

t.test('verify refuses everything but a live project JWT of exactly this project', async (t) => {
  const { clock, tokens } = setup()
  const good = goodClaims(clock, 'proj-a')
  const valid = tokens.sign('proj-a', 'user-1').token
  const [h, p, s] = valid.split('.')
  const platformKeySigned = createSigner({ key: randomBytes(32), algorithm: 'HS256', noTimestamp: true })({ ...good, type: 'platform', aud: 'plinth:platform' })
  const unsignedHeader = b64({ alg: 'none', typ: 'JWT' })
  const hmac = (input: string): string => createHmac('sha256', keyOf('proj-a')).update(input).digest('base64url')

  const cases: Array<[string, string]> = [
    ['the token of project B', tokens.sign('proj-b', 'user-1').token],
    ['a platform JWT (other key, type platform)', platformKeySigned],
    ['type platform, signed with this project\'s key', forge('proj-a', { ...good, type: 'platform' })],
    ['type missing', forge('proj-a', { ...good, type: undefined })],
    ['pid of another project', forge('proj-a', { ...good, pid: 'proj-b' })],
    ['aud of another project', forge('proj-a', { ...good, aud: projectAudience('proj-b') })],
    ['aud of the platform', forge('proj-a', { ...good, aud: 'plinth:platform' })],
    ['another issuer', forge('proj-a', { ...good, iss: 'https://evil.test' })],
    ['no exp', forge('proj-a', { ...good, exp: undefined })],
    ['no iat', forge('proj-a', { ...good, iat: undefined })],
    ['exp in the past', forge('proj-a', { ...good, exp: (good.iat as number) - 1 })],
    ['exp as a string', forge('proj-a', { ...good, exp: String(good.exp) })],
    ['nbf in the future', forge('proj-a', { ...good, nbf: (good.iat as number) + 60 })],
    ['empty sub', forge('proj-a', { ...good, sub: '' })],
    ['numeric sub', forge('proj-a', { ...good, sub: 42 })],
    ['alg HS512 with the right key', forge('proj-a', good, 'HS512')],
    ['alg none, no signature', `${unsignedHeader}.${b64(good)}.`],
    ['alg none, with the valid signature kept', `${unsignedHeader}.${p}.${s}`],
    ['header swapped, old signature', `${b64({ alg: 'HS256' })}.${p}.${s}`],
    ['tampered payload, old signature', `${h}.${b64({ ...decodePayload(valid), sub: 'admin' })}.${s}`],
    ['tampered signature', `${h}.${p}.${s.slice(0, -2)}${s.endsWith('AA') ? 'BB' : 'AA'}`],
    ['signature stripped', `${h}.${p}.`],
    ['re-signed by hand but with an extra header crit', `${b64({ alg: 'HS256', crit: ['x'], x: 1 })}.${p}.${hmac(`${b64({ alg: 'HS256', crit: ['x'], x: 1 })}.${p}`)}`],
    ['garbage', 'not-a-jwt'],
    ['three garbage parts', 'a.b.c'],
    ['empty string', ''],
    ['trailing space', `${valid} `],
    ['longer than any accepted bearer token', `${valid}${'A'.repeat(9000)}`]
  ]
  for (const [name, token] of cases) t.equal(tokens.verify('proj-a', token), null, name)
  t.match(tokens.verify('proj-a', valid), { userId: 'user-1' }, 'the untouched token still verifies')
  t.match(tokens.verify('proj-a', forge('proj-a', good)), { userId: 'user-1' }, 'and so does a hand-signed one with the right claims')
})

t.test('the cache never lets a token verified on one project pass on another', async (t) => {
  // One key for every project: only the claims can keep projects apart.
  const shared = randomBytes(32)
  const { tokens } = setup(() => shared)
  const tokenA = tokens.sign('proj-a', 'user-a').token
  t.match(tokens.verify('proj-a', tokenA), { userId: 'user-a' })
  t.match(tokens.verify('proj-a', tokenA), { userId: 'user-a' }, 'second verification (cached) gives the same answer')
  t.equal(tokens.verify('proj-b', tokenA), null, 'A\'s token on B, after A\'s was cached')
  t.match(tokens.verify('proj-a', tokenA), { userId: 'user-a' }, 'a refusal on B does not poison A')

  // A project id holding the separator would make `${projectId}\n${token}` collide; the pid re-check still refuses.
  const odd = 'proj-a\nx'
  const tokenOdd = tokens.sign(odd, 'user-odd').token
  t.match(tokens.verify(odd, tokenOdd), { userId: 'user-odd' })
  t.equal(tokens.verify('proj-a', `x\n${tokenOdd}`), null, 'a colliding cache key is refused')
})

t.test('misconfiguration is refused at once', async (t) => {
  const clock = new ManualClock()
  const cases: Array<[string, { issuer: string, ttlSeconds: number }]> = [
    ['zero ttl', { issuer: ISSUER, ttlSeconds: 0 }],
    ['fractional ttl', { issuer: ISSUER, ttlSeconds: 1.5 }],
    ['empty issuer', { issuer: '', ttlSeconds: TTL }]
  ]
  for (const [name, options] of cases) t.throws(() => new ProjectTokens({ keyFor: keyOf, clock, ...options }), RangeError, name)
  const shortKey = new ProjectTokens({ keyFor: () => randomBytes(16), clock, issuer: ISSUER, ttlSeconds: TTL })
  t.throws(() => shortKey.sign('proj-a', 'u'), RangeError, 'a key shorter than 32 bytes')
})
