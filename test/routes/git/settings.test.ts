import t from 'tap'
import { generateKeyPairSync } from 'node:crypto'
import { call } from '../../helper.js'
import { gitWorld } from './fixtures.js'

function sshKey (): string {
  const jwk = generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' })
  const wire = (data: Buffer): Buffer => Buffer.concat([Buffer.from([0, 0, 0, data.length]), data])
  return `ssh-ed25519 ${Buffer.concat([wire(Buffer.from('ssh-ed25519')), wire(Buffer.from(jwk.x as string, 'base64url'))]).toString('base64')} ci@example`
}

t.test('deploy keys: added with a token shown once, listed without it, removed', async (t) => {
  const world = await gitWorld(t)
  const { app, api, owner } = world
  const keysApi = `${api}/repositories/repo/deploy-keys`
  await world.createRepo({ name: 'Repo' })
  const key = sshKey()
  const created = await call(app, 'POST', keysApi, owner.auth, { title: 'CI', key })
  t.equal(created.status, 201)
  t.equal(created.headers.location, `${keysApi}/${created.body.data.id as string}`)
  t.match(created.body.data, { title: 'CI', key: key.split(' ').slice(0, 2).join(' '), fingerprint: /^SHA256:/, readOnly: true, tokenHint: /^plinthdk_…/, token: /^plinthdk_/ })
  const listed = await call(app, 'GET', keysApi, owner.auth)
  t.equal(listed.body.data.length, 1)
  t.notOk('token' in listed.body.data[0], 'the token is never listed')
  t.ok(await app.git.deployKeys.authenticate(created.body.data.token as string))

  await world.createRepo({ name: 'Other' })
  const cases: Array<[string, 'GET' | 'POST' | 'DELETE', string, Record<string, string>, unknown, number, string]> = [
    ['a member lists', 'GET', keysApi, world.member.auth, undefined, 403, 'APP_FORBIDDEN'],
    ['an outsider adds', 'POST', keysApi, world.outsider.auth, { title: 'x', key }, 404, 'APP_PROJECT_NOT_FOUND'],
    ['a key used already', 'POST', `${api}/repositories/other/deploy-keys`, owner.auth, { title: 'x', key }, 409, 'APP_GIT_DEPLOY_KEY_EXISTS'],
    ['a private key', 'POST', keysApi, owner.auth, { title: 'x', key: '-----BEGIN OPENSSH PRIVATE KEY-----' }, 400, 'APP_INVALID_SSH_KEY'],
    ['an unknown key', 'DELETE', `${keysApi}/nope`, owner.auth, undefined, 404, 'APP_GIT_DEPLOY_KEY_NOT_FOUND'],
    ['another repository\'s key', 'DELETE', `${api}/repositories/other/deploy-keys/${created.body.data.id as string}`, owner.auth, undefined, 404, 'APP_GIT_DEPLOY_KEY_NOT_FOUND']
  ]
  for (const [name, method, url, headers, body, status, code] of cases) {
    const res = await call(app, method, url, headers, body)
    t.equal(res.status, status, name)
    t.equal(res.body.code, code, name)
  }
  t.equal((await call(app, 'DELETE', `${keysApi}/${created.body.data.id as string}`, owner.auth)).status, 200)
  t.equal(await app.git.deployKeys.authenticate(created.body.data.token as string), null, 'its token stops working at once')
  t.equal((await call(app, 'POST', `${api}/repositories/other/deploy-keys`, owner.auth, { title: 'again', key })).status, 201, 'and the key may be used again')
  t.equal((await call(app, 'DELETE', `${api}/repositories/other`, owner.auth)).status, 200)
  t.same((await app.git.deployKeys.list(await app.git.repositories.get(world.projectId, 'repo'))), [])
})

t.test('protected-branch rules: create, change, delete', async (t) => {
  const world = await gitWorld(t)
  const { app, api, owner } = world
  const rulesApi = `${api}/repositories/repo/protected-branches`
  await world.createRepo({ name: 'Repo' })
  const created = await call(app, 'POST', rulesApi, owner.auth, { pattern: 'main' })
  t.equal(created.status, 201)
  t.match(created.body.data, { pattern: 'main', push: 'write', allowForcePush: false, allowDelete: false })
  const id = created.body.data.id as string
  const changed = await call(app, 'PUT', `${rulesApi}/${id}`, owner.auth, { pattern: 'release/**', allowDelete: true })
  t.match(changed.body.data, { pattern: 'release/**', allowDelete: true, push: 'write' })
  t.same((await call(app, 'GET', rulesApi, world.viewer.auth)).body.data, [changed.body.data])
  const partial = await call(app, 'PUT', `${rulesApi}/${id}`, owner.auth, { requiredApprovals: 2 })
  t.match(partial.body.data, { allowDelete: true, requiredApprovals: 2 })
  t.match((await call(app, 'PUT', `${rulesApi}/${id}`, owner.auth, { push: 'write' })).body.data, { allowDelete: true, requiredApprovals: 2 }, 'a change leaves what it does not name')
  await call(app, 'PUT', `${rulesApi}/${id}`, owner.auth, { requiredApprovals: 0 })
  await call(app, 'POST', rulesApi, owner.auth, { pattern: 'main' })

  const cases: Array<[string, 'POST' | 'PUT' | 'DELETE', string, Record<string, string>, unknown, number, string]> = [
    ['a member adds', 'POST', rulesApi, world.member.auth, { pattern: 'x' }, 403, 'APP_FORBIDDEN'],
    ['a bad pattern', 'POST', rulesApi, owner.auth, { pattern: 'a..*' }, 400, 'APP_GIT_INVALID_BRANCH_PATTERN'],
    ['an option as pattern', 'POST', rulesApi, owner.auth, { pattern: '-x' }, 400, 'APP_GIT_INVALID_BRANCH_PATTERN'],
    ['a pattern twice', 'POST', rulesApi, owner.auth, { pattern: 'main' }, 409, 'APP_GIT_RULE_EXISTS'],
    ['renamed onto another', 'PUT', `${rulesApi}/${id}`, owner.auth, { pattern: 'main' }, 409, 'APP_GIT_RULE_EXISTS'],
    ['an unknown push level', 'PUT', `${rulesApi}/${id}`, owner.auth, { push: 'everyone' }, 400, 'APP_VALIDATION_FAILED'],
    ['an unknown rule', 'PUT', `${rulesApi}/nope`, owner.auth, { allowDelete: false }, 404, 'APP_GIT_RULE_NOT_FOUND'],
    ['delete an unknown rule', 'DELETE', `${rulesApi}/nope`, owner.auth, undefined, 404, 'APP_GIT_RULE_NOT_FOUND']
  ]
  for (const [name, method, url, headers, body, status, code] of cases) {
    const res = await call(app, method, url, headers, body)
    t.equal(res.status, status, name)
    t.equal(res.body.code, code, name)
  }
  t.equal((await call(app, 'DELETE', `${rulesApi}/${id}`, owner.auth)).status, 200)
  t.same((await call(app, 'GET', rulesApi, owner.auth)).body.data.map((rule: { pattern: string }) => rule.pattern), ['main'])
})
