import t from 'tap'
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { buildTestApp, tempDir } from '../../helper.js'

const json = { 'content-type': 'application/json' }

async function signIn (app: Awaited<ReturnType<typeof buildTestApp>>, email: string): Promise<string> {
  await app.inject({ method: 'POST', url: '/api/auth/register', headers: json, payload: { email, password: 'correct horse battery', name: 'K' } })
  const res = await app.inject({ method: 'POST', url: '/api/auth/login', headers: json, payload: { email, password: 'correct horse battery' } })
  return res.json().data.accessToken as string
}

t.test('personal access tokens', async (t) => {
  const app = await buildTestApp(t, { env: { PAT_PREFIX: 'testpat' } })
  const jwt = await signIn(app, 'pat@example.com')
  const asJwt = { ...json, authorization: `Bearer ${jwt}` }

  const created = await app.inject({ method: 'POST', url: '/api/auth/api-keys', headers: asJwt, payload: { name: 'ci', scopes: ['git.read', 'git.read'] } })
  t.equal(created.statusCode, 201)
  const key = created.json().data
  t.match(key.token, /^testpat_[0-9A-Za-z]{36}$/, 'prefix_random+checksum')
  t.same(key.scopes, ['git.read'])
  t.equal(key.hint, `testpat_…${key.token.slice(-4)}`)
  const stored = await app.store.collection('platform_api_keys').findOne({ keyId: key.id })
  t.ok(stored, 'the key is stored under its public id')
  t.notMatch(JSON.stringify(stored), key.token, 'only a hash is stored')

  const asPat = { ...json, authorization: `Bearer ${key.token}` }
  const me = await app.inject({ url: '/api/auth/me', headers: asPat })
  t.equal(me.statusCode, 200, 'a PAT works where a platform JWT does')
  t.equal(me.json().data.email, 'pat@example.com')

  const listed = await app.inject({ url: '/api/auth/api-keys', headers: asPat })
  t.equal(listed.statusCode, 200)
  t.equal(listed.json().data.length, 1)
  t.notOk('token' in listed.json().data[0], 'listing never shows the token')
  t.type(listed.json().data[0].lastUsedAt, 'string', 'last use is recorded')

  const patCreates = await app.inject({ method: 'POST', url: '/api/auth/api-keys', headers: asPat, payload: { name: 'nested' } })
  t.equal(patCreates.statusCode, 403, 'a PAT cannot create PATs')
  t.equal(patCreates.json().code, 'APP_PAT_NOT_ALLOWED')
  const patRevokes = await app.inject({ method: 'DELETE', url: `/api/auth/api-keys/${key.id}`, headers: asPat })
  t.equal(patRevokes.statusCode, 403, 'a PAT cannot revoke PATs')

  const typo = key.token.slice(0, -1) + (key.token.endsWith('A') ? 'B' : 'A')
  t.equal((await app.inject({ url: '/api/auth/me', headers: { authorization: `Bearer ${typo}` } })).statusCode, 401, 'a typo fails its checksum')

  const past = await app.inject({ method: 'POST', url: '/api/auth/api-keys', headers: asJwt, payload: { name: 'old', expiresAt: '2001-01-01T00:00:00Z' } })
  t.equal(past.statusCode, 400)
  t.equal(past.json().code, 'APP_INVALID_EXPIRY')
  const badScope = await app.inject({ method: 'POST', url: '/api/auth/api-keys', headers: asJwt, payload: { name: 'x', scopes: ['Bad Scope'] } })
  t.equal(badScope.statusCode, 400)

  // Three seconds to create it and use it once, on a loaded machine too; then a wait until just past its expiry.
  const expiresAt = Date.now() + 3000
  const soon = (await app.inject({ method: 'POST', url: '/api/auth/api-keys', headers: asJwt, payload: { name: 'soon', expiresAt: new Date(expiresAt).toISOString() } })).json().data
  t.equal((await app.inject({ url: '/api/auth/me', headers: { authorization: `Bearer ${soon.token}` } })).statusCode, 200)
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, expiresAt - Date.now()) + 100))
  t.equal((await app.inject({ url: '/api/auth/me', headers: { authorization: `Bearer ${soon.token}` } })).statusCode, 401, 'an expired PAT is refused')

  const other = await signIn(app, 'other@example.com')
  const foreign = await app.inject({ method: 'DELETE', url: `/api/auth/api-keys/${key.id}`, headers: { authorization: `Bearer ${other}` } })
  t.equal(foreign.statusCode, 404, "another user's key is not found")

  const revoked = await app.inject({ method: 'DELETE', url: `/api/auth/api-keys/${key.id}`, headers: asJwt })
  t.equal(revoked.statusCode, 200)
  t.same(revoked.json(), { success: true, data: { id: key.id, deleted: true } }, 'the one delete answer of every family')
  t.equal((await app.inject({ url: '/api/auth/me', headers: asPat })).statusCode, 401, 'revocation is immediate')
  t.equal((await app.inject({ method: 'DELETE', url: `/api/auth/api-keys/${key.id}`, headers: asJwt })).statusCode, 404, 'revoking twice is 404')
})

t.test('SSH keys', async (t) => {
  const app = await buildTestApp(t)
  const jwt = await signIn(app, 'ssh@example.com')
  const auth = { ...json, authorization: `Bearer ${jwt}` }
  const dir = tempDir(t)
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'laptop', '-f', join(dir, 'id')])
  const publicKey = readFileSync(join(dir, 'id.pub'), 'utf8')
  const expected = execFileSync('ssh-keygen', ['-lf', join(dir, 'id.pub')], { encoding: 'utf8' }).split(' ')[1]

  const added = await app.inject({ method: 'POST', url: '/api/auth/ssh-keys', headers: auth, payload: { title: 'Laptop', key: publicKey } })
  t.equal(added.statusCode, 201)
  t.match(added.json().data, { title: 'Laptop', type: 'ssh-ed25519', bits: 256, fingerprint: expected })

  const again = await app.inject({ method: 'POST', url: '/api/auth/ssh-keys', headers: auth, payload: { title: 'Again', key: publicKey.replace('laptop', 'other comment') } })
  t.equal(again.statusCode, 409)
  t.equal(again.json().code, 'APP_SSH_KEY_EXISTS')
  const garbage = await app.inject({ method: 'POST', url: '/api/auth/ssh-keys', headers: auth, payload: { title: 'x', key: 'ssh-ed25519 AAAA-not-base64' } })
  t.equal(garbage.statusCode, 400)
  t.equal(garbage.json().code, 'APP_INVALID_SSH_KEY')

  const list = await app.inject({ url: '/api/auth/ssh-keys', headers: auth })
  t.same(list.json().data.map((k: { fingerprint: string }) => k.fingerprint), [expected])
  t.equal((await app.inject({ url: '/api/auth/ssh-keys' })).statusCode, 401, 'needs a platform credential')

  const removed = await app.inject({ method: 'DELETE', url: `/api/auth/ssh-keys/${added.json().data.id}`, headers: auth })
  t.equal(removed.statusCode, 200)
  t.same(removed.json(), { success: true, data: { id: added.json().data.id, deleted: true } }, 'the one delete answer of every family')
  t.equal((await app.inject({ method: 'DELETE', url: `/api/auth/ssh-keys/${added.json().data.id}`, headers: auth })).statusCode, 404)
})

t.test('a PAT, scoped or not, cannot add or remove SSH keys: those are unscoped credentials', async (t) => {
  const app = await buildTestApp(t)
  const jwt = await signIn(app, 'ssh@example.com')
  const asJwt = { ...json, authorization: `Bearer ${jwt}` }
  const dir = tempDir(t)
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'k', '-f', join(dir, 'id')])
  const publicKey = readFileSync(join(dir, 'id.pub'), 'utf8')
  const kept = (await app.inject({ method: 'POST', url: '/api/auth/ssh-keys', headers: asJwt, payload: { title: 'Laptop', key: publicKey } })).json().data
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'k', '-f', join(dir, 'other')])
  for (const scopes of [['git.read'], undefined]) {
    const pat = (await app.inject({ method: 'POST', url: '/api/auth/api-keys', headers: asJwt, payload: { name: 'ci', ...(scopes === undefined ? {} : { scopes }) } })).json().data.token as string
    const asPat = { ...json, authorization: `Bearer ${pat}` }
    const added = await app.inject({ method: 'POST', url: '/api/auth/ssh-keys', headers: asPat, payload: { title: 'Sneaky', key: readFileSync(join(dir, 'other.pub'), 'utf8') } })
    t.same([added.statusCode, added.json().code], [403, 'APP_PAT_NOT_ALLOWED'], `${scopes === undefined ? 'an unscoped' : 'a scoped'} PAT cannot add one`)
    const removed = await app.inject({ method: 'DELETE', url: `/api/auth/ssh-keys/${kept.id as string}`, headers: asPat })
    t.same([removed.statusCode, removed.json().code], [403, 'APP_PAT_NOT_ALLOWED'], 'nor remove one')
    t.equal((await app.inject({ url: '/api/auth/ssh-keys', headers: asPat })).statusCode, 200, 'listing them is fine')
  }
  t.equal((await app.inject({ url: '/api/auth/ssh-keys', headers: asJwt })).json().data.length, 1, 'the keys are as the session left them')
})
