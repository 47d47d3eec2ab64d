import t, { type Test } from 'tap'
import { createHash } from 'node:crypto'
import { ManualClock } from '../../../services/platform/clock.js'
import { createIdGenerator } from '../../../services/platform/ids.js'
import { createPat } from '../../../services/identity/pat-format.js'
import { MAX_SERVICE_TOKENS_PER_PROJECT, ServiceTokens } from '../../../services/projects/service-tokens.js'
import { openStore } from '../../../services/store/index.js'
import { countingReads, tempDir, tempStore } from '../../helper.js'

const PREFIX = 'plinthsvc'
const COLLECTION = 'project_service_tokens'
const START = Date.UTC(2026, 0, 1)

async function setup (t: Test) {
  const raw = await tempStore(t, 'plinth-service-tokens-')
  const { store, reads } = countingReads(raw, COLLECTION)
  const clock = new ManualClock(START)
  const tokens = new ServiceTokens(store, { clock, newId: createIdGenerator(() => clock.nowMs()), prefix: PREFIX })
  await tokens.init()
  await tokens.init()
  return { raw, clock, tokens, reads }
}

t.test('create returns the token once; the Store keeps only its hash', async (t) => {
  const { raw, tokens } = await setup(t)
  const created = await tokens.create('proj-a', { name: '  deploy bot ', createdBy: 'user-1', expiresAt: '2026-02-01T00:00:00Z' })
  t.match(created.token, new RegExp(`^${PREFIX}_[0-9A-Za-z]{36}$`))
  t.same({ ...created, id: 'x', token: 'x' }, {
    id: 'x',
    name: 'deploy bot',
    hint: `${PREFIX}_…${created.token.slice(-4)}`,
    createdBy: 'user-1',
    createdAt: '2026-01-01T00:00:00.000Z',
    lastUsedAt: null,
    expiresAt: '2026-02-01T00:00:00.000Z',
    token: 'x'
  })
  t.match(created.id, /^[0-9a-z]{20}$/)
  const stored = await raw.collection(COLLECTION).find({}).toArray()
  t.equal(stored.length, 1)
  t.equal(stored[0]._id, createHash('sha256').update(created.token).digest('hex'))
  t.notOk(JSON.stringify(stored).includes(created.token), 'the plaintext token is stored nowhere')
  t.same(Object.keys(stored[0]).sort(), ['_id', 'createdAt', 'createdBy', 'expiresAt', 'hint', 'lastUsedAt', 'name', 'projectId', 'revokedAt', 'tokenId'])

  const forever = await tokens.create('proj-a', { name: 'ci', createdBy: 'user-1' })
  t.equal(forever.expiresAt, null)
  t.not(forever.token, created.token)
})

t.test('create refuses an expiry that is not in the future', async (t) => {
  const { tokens } = await setup(t)
  for (const expiresAt of ['2025-12-31T23:59:59Z', '2026-01-01T00:00:00Z', 'tomorrow', '']) {
    await t.rejects(tokens.create('proj-a', { name: 'x', createdBy: 'u', expiresAt }), { status: 400, code: 'APP_INVALID_EXPIRY' }, JSON.stringify(expiresAt))
  }
  t.same(await tokens.list('proj-a'), [], 'nothing was created')
})

t.test('at most 50 active tokens per project; revoked and expired ones make room', async (t) => {
  const { clock, tokens } = await setup(t)
  t.equal(MAX_SERVICE_TOKENS_PER_PROJECT, 50)
  const made = []
  for (let i = 0; i < 48; i++) made.push(await tokens.create('proj-a', { name: `t${i}`, createdBy: 'u' }))
  made.push(await tokens.create('proj-a', { name: 'short 1', createdBy: 'u', expiresAt: '2026-01-01T00:01:00Z' }))
  made.push(await tokens.create('proj-a', { name: 'short 2', createdBy: 'u', expiresAt: '2026-01-01T00:01:00Z' }))
  const tooMany = { status: 400, code: 'APP_TOO_MANY_SERVICE_TOKENS' }
  await t.rejects(tokens.create('proj-a', { name: 'one more', createdBy: 'u' }), tooMany)
  t.ok(await tokens.create('proj-b', { name: 'other project', createdBy: 'u' }), 'the limit is per project')

  await tokens.revoke('proj-a', made[0].id)
  t.ok(await tokens.create('proj-a', { name: 'after revoke', createdBy: 'u' }))
  await t.rejects(tokens.create('proj-a', { name: 'one more', createdBy: 'u' }), tooMany)

  clock.advance(60_000)
  t.ok(await tokens.create('proj-a', { name: 'after expiry 1', createdBy: 'u' }))
  t.ok(await tokens.create('proj-a', { name: 'after expiry 2', createdBy: 'u' }))
  await t.rejects(tokens.create('proj-a', { name: 'one more', createdBy: 'u' }), tooMany)
})

t.test('list shows the project\'s unrevoked tokens, never a token or its hash', async (t) => {
  const { clock, tokens } = await setup(t)
  const a1 = await tokens.create('proj-a', { name: 'a1', createdBy: 'u1' })
  const a2 = await tokens.create('proj-a', { name: 'a2', createdBy: 'u2', expiresAt: '2026-01-01T00:00:10Z' })
  const a3 = await tokens.create('proj-a', { name: 'a3', createdBy: 'u1' })
  await tokens.create('proj-b', { name: 'b1', createdBy: 'u1' })
  await tokens.revoke('proj-a', a3.id)
  clock.advance(20_000)
  const listed = await tokens.list('proj-a')
  t.same(listed.map((token) => token.name), ['a1', 'a2'], 'in creation order; revoked gone, expired still shown')
  const { token: _token1, ...view1 } = a1
  const { token: _token2, ...view2 } = a2
  t.same(listed, [view1, view2])
  t.same(Object.keys(listed[0]).sort(), ['createdAt', 'createdBy', 'expiresAt', 'hint', 'id', 'lastUsedAt', 'name'])
  t.same(await tokens.list('proj-c'), [])
})

t.test('revoke: only an active token of this project, and it stops working at once', async (t) => {
  const { tokens } = await setup(t)
  const a = await tokens.create('proj-a', { name: 'a', createdBy: 'u' })
  const b = await tokens.create('proj-b', { name: 'b', createdBy: 'u' })
  t.same(await tokens.authenticate(a.token), { projectId: 'proj-a', tokenId: a.id })
  const notFound = { status: 404, code: 'APP_SERVICE_TOKEN_NOT_FOUND' }
  await t.rejects(tokens.revoke('proj-a', b.id), notFound, 'another project\'s token id')
  await t.rejects(tokens.revoke('proj-a', 'no-such-token'), notFound, 'an unknown id')
  t.same(await tokens.authenticate(b.token), { projectId: 'proj-b', tokenId: b.id }, 'the refused revoke left B\'s token alone')
  await tokens.revoke('proj-a', a.id)
  t.equal(await tokens.authenticate(a.token), null, 'revoked: refused on the very next call')
  await t.rejects(tokens.revoke('proj-a', a.id), notFound, 'already revoked')
})

t.test('authenticate: malformed tokens never reach the Store; unknown and expired ones are null', async (t) => {
  const { clock, tokens, reads } = await setup(t)
  const live = await tokens.create('proj-a', { name: 'live', createdBy: 'u', expiresAt: '2026-01-01T01:00:00Z' })
  const last = live.token.at(-1) === 'A' ? 'B' : 'A'
  const malformed: Array<[string, string]> = [
    ['empty', ''],
    ['garbage', 'hello'],
    ['a PAT of the platform prefix', createPat('plinth')],
    ['the right body under another prefix', live.token.replace(`${PREFIX}_`, 'plinthpat_')],
    ['bad checksum', `${live.token.slice(0, -1)}${last}`],
    ['too short', live.token.slice(0, -1)],
    ['too long', `${live.token}A`],
    ['a JWT', 'eyJhbGciOiJIUzI1NiJ9.e30.sig'],
    ['not a string', 42 as unknown as string]
  ]
  for (const [name, token] of malformed) t.equal(await tokens.authenticate(token), null, name)
  t.equal(reads(), 0, 'not one Store read for a malformed token')

  t.equal(await tokens.authenticate(createPat(PREFIX)), null, 'well formed but unknown')
  t.equal(reads(), 1)
  t.same(await tokens.authenticate(live.token), { projectId: 'proj-a', tokenId: live.id })
  clock.set(Date.UTC(2026, 0, 1, 0, 59, 59, 999))
  t.same(await tokens.authenticate(live.token), { projectId: 'proj-a', tokenId: live.id }, 'a millisecond before expiry')
  clock.advance(1)
  t.equal(await tokens.authenticate(live.token), null, 'expired at expiresAt')
})

t.test('lastUsedAt is written at most once a minute', async (t) => {
  const { clock, tokens } = await setup(t)
  const { token, id } = await tokens.create('proj-a', { name: 'busy', createdBy: 'u' })
  const lastUsed = async (): Promise<string | null> => (await tokens.list('proj-a')).find((view) => view.id === id)?.lastUsedAt ?? null
  t.equal(await lastUsed(), null)
  clock.advance(1_000)
  await tokens.authenticate(token)
  t.equal(await lastUsed(), '2026-01-01T00:00:01.000Z')
  clock.advance(60_000)
  await tokens.authenticate(token)
  t.equal(await lastUsed(), '2026-01-01T00:00:01.000Z', 'exactly a minute later: not rewritten')
  clock.advance(1)
  await tokens.authenticate(token)
  t.equal(await lastUsed(), '2026-01-01T00:01:01.001Z')
})

t.test('deleteAllForProject removes that project\'s tokens only', async (t) => {
  const { tokens } = await setup(t)
  const a1 = await tokens.create('proj-a', { name: 'a1', createdBy: 'u' })
  const a2 = await tokens.create('proj-a', { name: 'a2', createdBy: 'u' })
  await tokens.revoke('proj-a', a2.id)
  const b = await tokens.create('proj-b', { name: 'b', createdBy: 'u' })
  t.equal(await tokens.deleteAllForProject('proj-a'), 2, 'revoked ones too')
  t.equal(await tokens.authenticate(a1.token), null)
  t.same(await tokens.list('proj-a'), [])
  t.same(await tokens.authenticate(b.token), { projectId: 'proj-b', tokenId: b.id })
  t.equal(await tokens.deleteAllForProject('proj-a'), 0)
})

t.test('a token another process revokes stops working from that process\'s next turn', async (t) => {
  const dir = tempDir(t, 'plinth-service-tokens-shared-')
  const options = { dataDir: dir, mongodbUrl: null, mongodbDb: 'plinth' }
  const here = await openStore(options)
  const there = await openStore(options)
  t.teardown(async () => { await here.close(); await there.close() })
  const clock = new ManualClock(START)
  const newId = createIdGenerator(() => clock.nowMs())
  const mine = new ServiceTokens(here, { clock, newId, prefix: PREFIX })
  const theirs = new ServiceTokens(there, { clock, newId, prefix: PREFIX })
  await mine.init()
  const made = await mine.create('proj-a', { name: 'ci', createdBy: 'u' })
  t.match(await mine.authenticate(made.token), { projectId: 'proj-a' })
  t.match(await mine.authenticate(made.token), { projectId: 'proj-a' }, 'a second check in the same state')
  await new Promise((resolve) => setImmediate(resolve))
  await theirs.revoke('proj-a', made.id)
  await new Promise((resolve) => setImmediate(resolve))
  t.equal(await mine.authenticate(made.token), null, 'refused once the other process\'s commit is visible')
})
