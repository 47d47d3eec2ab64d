import t from 'tap'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { exportJWK, generateKeyPair } from 'jose'
// @ts-expect-error oidc-provider publishes no type declarations; the few members used are typed below.
import OidcProviderModule from 'oidc-provider'
import { buildTestApp, call, signUp } from '../../helper.js'
import { authorizeAtProvider } from '../../fixtures/oidc-browser.js'
import { createClient } from '../../../sdk/client/index.js'

/** A project's end users sign in through a real OpenID provider (oidc-provider) on loopback, reached through the address guard. */

type Handler = (request: IncomingMessage, response: ServerResponse) => void
const OidcProviderClass = OidcProviderModule as new (issuer: string, configuration: Record<string, unknown>) => { callback (): Handler }
const PUBLIC_URL = 'http://plinth.test'
const APP_ORIGIN = 'http://app.test'
// RFC 7636's example pair: the app's PKCE verifier for the ticket, and its S256 challenge.
const VERIFIER = 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk'
const CHALLENGE = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM'
const CLIENT = { id: 'shop-app', secret: 'shop secret' }

let handler: Handler = () => {}
const server = createServer((request, response) => handler(request, response))
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
server.unref()
t.teardown(() => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()) }))
const opUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`

const app = await buildTestApp(t, { env: { PUBLIC_URL, AUTH_RATE_LIMIT_MAX: '1000', PROJECT_OAUTH_ALLOWED_HOSTS: '127.0.0.1' } })
const admin = await signUp(app, 'admin@example.com')
const orgId = (await call(app, 'POST', '/api/organizations', admin.auth, { name: 'Acme' })).body.data.id as string
const projectId = (await call(app, 'POST', '/api/projects', admin.auth, { orgId, name: 'Shop' })).body.data.id as string
await call(app, 'POST', `/api/projects/${projectId}/auth/toggle`, admin.auth, { enabled: true })
await call(app, 'PUT', `/api/projects/${projectId}`, admin.auth, { allowedOrigins: [APP_ORIGIN] })
const callbackUrl = `${PUBLIC_URL}/api/p/${projectId}/auth/oauth/corp/callback`
// A second provider of the project, on the same OpenID provider and client.
const backupCallbackUrl = `${PUBLIC_URL}/api/p/${projectId}/auth/oauth/backup/callback`

const key = await generateKeyPair('RS256', { extractable: true })
handler = new OidcProviderClass(opUrl, {
  clients: [{ client_id: CLIENT.id, client_secret: CLIENT.secret, redirect_uris: [callbackUrl, backupCallbackUrl], token_endpoint_auth_method: 'client_secret_basic' }],
  jwks: { keys: [{ ...await exportJWK(key.privateKey), kid: 'k1', alg: 'RS256', use: 'sig' }] },
  pkce: { required: () => true },
  claims: { openid: ['sub'], email: ['email', 'email_verified'] },
  cookies: { keys: ['test-only-cookie-key'] },
  // `unverified-*` accounts have an address the provider has not verified; the rest are at example.com, verified.
  findAccount: (_ctx: unknown, id: string) => ({ accountId: id, claims: () => ({ sub: id, email: `${id.replace(/^unverified-/, '')}@example.com`, email_verified: !id.startsWith('unverified') }) })
}).callback()

/** Through the provider's login and consent pages, until it sends the browser back to Plinth. */
async function authorize (authorizationUrl: string, login: string): Promise<URL> {
  const outcome = await authorizeAtProvider(opUrl, authorizationUrl, login)
  if (!('redirect' in outcome)) throw new Error('the provider answered with a form post, not a redirect')
  return outcome.redirect
}

const auth = `/api/p/${projectId}/auth/oauth`
const providerUrl = `/api/projects/${projectId}/auth/oauth-providers/corp`

/** A whole sign-in in one browser: the callback's answer, and the cookie and URL used, for replays. */
async function signIn (login: string, provider = 'corp', startPath = `${auth}/${provider}/start?redirectTo=${encodeURIComponent(`${APP_ORIGIN}/done`)}&codeChallenge=${CHALLENGE}`) {
  const started = await app.inject({ url: startPath })
  if (started.statusCode !== 302) throw new Error(`start answered ${started.statusCode}: ${started.body}`)
  const cookie = String(started.headers['set-cookie']).split(';')[0]
  const back = await authorize(started.headers.location as string, login)
  const path = `${back.pathname}${back.search}`
  const landed = await app.inject({ url: path, headers: { cookie } })
  return { landed, location: new URL(landed.headers.location as string), cookie, path }
}

t.test('an admin sets a provider; the secret is sealed and never answered; internal hosts are refused', async (t) => {
  const refused = await call(app, 'PUT', `/api/projects/${projectId}/auth/oauth-providers/inside`, admin.auth, { issuer: 'http://10.1.2.3', clientId: 'x', clientSecret: 'y' })
  t.equal(refused.status, 400)
  t.equal(refused.body.code, 'APP_OAUTH_HOST_REFUSED')
  const noSecret = await call(app, 'PUT', providerUrl, admin.auth, { issuer: opUrl, clientId: CLIENT.id })
  t.equal(noSecret.body.code, 'APP_VALIDATION_FAILED', 'a new provider needs its secret')
  const saved = await call(app, 'PUT', providerUrl, admin.auth, { issuer: opUrl, clientId: CLIENT.id, clientSecret: CLIENT.secret, label: 'Corp', scopes: ['email'] })
  t.equal(saved.status, 200)
  t.equal(saved.body.data.callbackUrl, callbackUrl)
  t.same(saved.body.data.scopes, ['openid', 'email'])
  t.notMatch(JSON.stringify(saved.body), CLIENT.secret)
  const listed = await app.inject({ url: `${auth}/providers` })
  t.same(listed.json().data, [{ id: 'corp', label: 'Corp', startUrl: `${auth}/corp/start` }])

  const moved = { authorization: `${opUrl}/auth`, token: `${opUrl}/elsewhere/token`, jwks: `${opUrl}/jwks` }
  const keptSecretMoved = await call(app, 'PUT', providerUrl, admin.auth, { issuer: opUrl, clientId: CLIENT.id, endpoints: moved, label: 'Corp', scopes: ['email'] })
  t.equal(keptSecretMoved.body.code, 'APP_VALIDATION_FAILED', 'the stored secret is not kept for new endpoints')
  const kept = await call(app, 'PUT', providerUrl, admin.auth, { issuer: opUrl, clientId: CLIENT.id, label: 'Corp', scopes: ['email'] })
  t.equal(kept.status, 200, 'the same issuer, endpoints and client keep the stored secret')
})

t.test('sign-in creates an end user, a second sign-in finds the same one; replays and tampering are refused', async (t) => {
  const first = await signIn('ann')
  t.equal(first.location.origin, APP_ORIGIN)
  const ticket = first.location.searchParams.get('ticket')
  t.ok(ticket, `landed with a ticket: ${first.location.href}`)
  const session = await call(app, 'POST', `${auth}/exchange`, {}, { ticket, codeVerifier: VERIFIER })
  t.equal(session.status, 200)
  t.equal(session.body.data.user.email, 'ann@example.com')
  t.equal(session.body.data.user.emailVerified, true)
  const me = await call(app, 'GET', `/api/p/${projectId}/auth/me`, { authorization: `Bearer ${session.body.data.accessToken as string}` })
  t.equal(me.body.data.id, session.body.data.user.id, 'the project\'s normal session')
  const again = await call(app, 'POST', `${auth}/exchange`, {}, { ticket, codeVerifier: VERIFIER })
  t.equal(again.status, 401)
  t.equal(again.body.code, 'APP_INVALID_SSO_TICKET', 'a ticket works once')

  const replayed = await app.inject({ url: first.path, headers: { cookie: first.cookie } })
  t.equal(replayed.statusCode, 400)
  t.equal(replayed.json().code, 'APP_SSO_INVALID_STATE', 'a replayed callback (code and state) is refused')

  const second = await signIn('ann')
  const secondSession = await call(app, 'POST', `${auth}/exchange`, {}, { ticket: second.location.searchParams.get('ticket'), codeVerifier: VERIFIER })
  t.equal(secondSession.body.data.user.id, session.body.data.user.id, 'the same end user')

  const started = await app.inject({ url: `${auth}/corp/start?redirectTo=${encodeURIComponent(`${APP_ORIGIN}/done`)}&codeChallenge=${CHALLENGE}` })
  const back = await authorize(started.headers.location as string, 'ann')
  const tampered = new URL(back.href)
  tampered.searchParams.set('state', `${tampered.searchParams.get('state') ?? ''}x`)
  const bad = await app.inject({ url: `${tampered.pathname}${tampered.search}`, headers: { cookie: String(started.headers['set-cookie']).split(';')[0] } })
  t.equal(bad.statusCode, 400)
  t.equal(bad.json().code, 'APP_SSO_INVALID_STATE', 'a tampered state is refused')
  const flowCookie = String(started.headers['set-cookie']).split('=')[0]
  t.match(flowCookie, /^plinth_oauth_[0-9a-f]{16}$/, 'the cookie is named for its flow')
  const otherBrowser = await app.inject({ url: `${back.pathname}${back.search}`, headers: { cookie: `${flowCookie}=someone-else` } })
  t.equal(otherBrowser.json().code, 'APP_SSO_INVALID_STATE', 'the callback in another browser is refused')

  const offSite = await app.inject({ url: `${auth}/corp/start?redirectTo=${encodeURIComponent('http://evil.test/')}&codeChallenge=${CHALLENGE}` })
  t.equal(offSite.json().code, 'APP_OAUTH_REDIRECT_NOT_ALLOWED')
})

t.test('an unverified address never reaches an existing account', async (t) => {
  const register = await call(app, 'POST', `/api/p/${projectId}/auth/register`, {}, { email: 'bob@example.com', password: 'correct horse battery' })
  t.equal(register.status, 201)
  const attempt = await signIn('unverified-bob')
  t.equal(attempt.location.searchParams.get('error'), 'APP_SSO_EMAIL_NOT_VERIFIED')
  t.equal(attempt.location.searchParams.get('ticket'), null)
  const login = await call(app, 'POST', `/api/p/${projectId}/auth/login`, {}, { email: 'bob@example.com', password: 'correct horse battery' })
  t.equal(login.status, 200, 'the account is untouched')

  // With no account yet, an unproven address makes none: its link would outlive the owner's later reset or proof.
  const claimed = await signIn('unverified-carol')
  t.equal(claimed.location.searchParams.get('error'), 'APP_SSO_EMAIL_NOT_VERIFIED')
  const carol = await call(app, 'POST', `/api/p/${projectId}/auth/register`, {}, { email: 'carol@example.com', password: 'correct horse battery' })
  t.equal(carol.status, 201, 'the address is still free for its owner')
  t.equal((await signIn('unverified-carol')).location.searchParams.get('error'), 'APP_SSO_EMAIL_NOT_VERIFIED', 'and the unproven claim never reaches her account')
})

t.test('two sign-ins started in one browser (two tabs) both complete, in either order', async (t) => {
  // The browser's cookie jar for the project's OAuth path: a cookie of the same name replaces the one before.
  const jar = new Map<string, string>()
  const start = async () => {
    const started = await app.inject({ url: `${auth}/corp/start?redirectTo=${encodeURIComponent(`${APP_ORIGIN}/done`)}&codeChallenge=${CHALLENGE}`, headers: { cookie: cookieHeader() } })
    const [name, value] = String(started.headers['set-cookie']).split(';')[0].split('=')
    jar.set(name, value)
    return started.headers.location as string
  }
  const cookieHeader = () => [...jar].map(([name, value]) => `${name}=${value}`).join('; ')
  const first = await start()
  const second = await start()
  t.equal(jar.size, 2, 'the second did not replace the first\'s cookie')
  const backSecond = await authorize(second, 'erin')
  const backFirst = await authorize(first, 'erin')
  for (const [name, back] of [['first', backFirst], ['second', backSecond]] as const) {
    const landed = await app.inject({ url: `${back.pathname}${back.search}`, headers: { cookie: cookieHeader() } })
    t.equal(landed.statusCode, 302, name)
    t.ok(new URL(landed.headers.location as string).searchParams.get('ticket'), `the ${name} completes`)
    const cleared = String(landed.headers['set-cookie']).split(';')[0].split('=')[0]
    t.ok(jar.delete(cleared), 'and clears its own cookie only')
  }
})

t.test('a ticket is traded only by the app that started its sign-in (login CSRF)', async (t) => {
  const noChallenge = await app.inject({ url: `${auth}/corp/start?redirectTo=${encodeURIComponent(`${APP_ORIGIN}/done`)}` })
  t.same([noChallenge.statusCode, noChallenge.json().code], [400, 'APP_VALIDATION_FAILED'], 'a sign-in starts only with a code challenge')
  // The attacker signs in as themselves and sends the landing link to a victim, whose app holds another verifier, or none.
  const attackers = await signIn('mallory')
  const ticket = attackers.location.searchParams.get('ticket')
  const victims = await call(app, 'POST', `${auth}/exchange`, {}, { ticket, codeVerifier: 'x'.repeat(43) })
  t.same([victims.status, victims.body.code], [401, 'APP_INVALID_SSO_TICKET'], 'the victim\'s verifier does not trade it')
  const noVerifier = await call(app, 'POST', `${auth}/exchange`, {}, { ticket })
  t.equal(noVerifier.status, 400, 'nor does no verifier')
  const late = await call(app, 'POST', `${auth}/exchange`, {}, { ticket, codeVerifier: VERIFIER })
  t.same([late.status, late.body.code], [401, 'APP_INVALID_SSO_TICKET'], 'and a wrong attempt used it up')
  const sdk = createClient({ baseUrl: 'http://plinth.test', projectId })
  await t.rejects(sdk.auth.exchangeOauthTicket(`${APP_ORIGIN}/done?ticket=${ticket ?? ''}`), { code: 'SDK_NO_OAUTH_SIGN_IN' }, 'the SDK sends nothing for a sign-in it did not start')
})

const me = `/api/p/${projectId}/auth/me`

t.test('an end user lists their linked identities and unlinks one, never the last way in', async (t) => {
  const dave = await signIn('dave')
  const session = await call(app, 'POST', `${auth}/exchange`, {}, { ticket: dave.location.searchParams.get('ticket'), codeVerifier: VERIFIER })
  t.equal(session.status, 200)
  const bearer = { authorization: `Bearer ${session.body.data.accessToken as string}` }
  const listed = await call(app, 'GET', `${me}/identities`, bearer)
  t.equal(listed.status, 200)
  t.match(listed.body.data, [{ provider: 'corp', email: 'dave@example.com', linkedAt: /^\d{4}-\d\d-\d\dT/ }])
  t.equal(listed.body.data.length, 1)

  const only = await call(app, 'DELETE', `${me}/identities/corp`, bearer)
  t.same([only.status, only.body.code], [409, 'APP_OAUTH_LAST_SIGN_IN_METHOD'], 'no password and no other identity: refused')
  t.equal((await call(app, 'GET', `${me}/identities`, bearer)).body.data.length, 1, 'and the identity stays')
  const none = await call(app, 'DELETE', `${me}/identities/backup`, bearer)
  t.same([none.status, none.body.code], [404, 'APP_OAUTH_IDENTITY_NOT_FOUND'], 'nothing linked there')
  t.equal((await call(app, 'GET', `${me}/identities`, {})).status, 401, 'only for a signed-in end user')
  t.equal((await call(app, 'DELETE', `${me}/identities/corp`, {})).status, 401)

  const backupUrl = `/api/projects/${projectId}/auth/oauth-providers/backup`
  t.equal((await call(app, 'PUT', backupUrl, admin.auth, { issuer: opUrl, clientId: CLIENT.id, clientSecret: CLIENT.secret })).status, 200)
  t.teardown(async () => { await call(app, 'DELETE', backupUrl, admin.auth) })
  const viaBackup = await call(app, 'POST', `${auth}/exchange`, {}, { ticket: (await signIn('dave', 'backup')).location.searchParams.get('ticket'), codeVerifier: VERIFIER })
  t.equal(viaBackup.body.data.user.id, session.body.data.user.id, 'the second provider proved the same address: linked to dave')
  t.same((await call(app, 'GET', `${me}/identities`, bearer)).body.data.map((identity: { provider: string }) => identity.provider), ['corp', 'backup'])

  t.equal((await call(app, 'PUT', backupUrl, admin.auth, { issuer: opUrl, clientId: CLIENT.id, enabled: false })).status, 200)
  const disabledOther = await call(app, 'DELETE', `${me}/identities/corp`, bearer)
  t.same([disabledOther.status, disabledOther.body.code], [409, 'APP_OAUTH_LAST_SIGN_IN_METHOD'], 'an identity at a disabled provider is no way in')
  t.equal((await call(app, 'PUT', backupUrl, admin.auth, { issuer: opUrl, clientId: CLIENT.id, enabled: true })).status, 200)
  const unlinked = await call(app, 'DELETE', `${me}/identities/corp`, bearer)
  t.same([unlinked.status, unlinked.body.data], [200, { id: 'corp', deleted: true }], 'with another way in, unlinked')
  t.same((await call(app, 'GET', `${me}/identities`, bearer)).body.data.map((identity: { provider: string }) => identity.provider), ['backup'])
  t.equal((await call(app, 'DELETE', `${me}/identities/backup`, bearer)).body.code, 'APP_OAUTH_LAST_SIGN_IN_METHOD', 'now the last one')

  const client = createClient({ baseUrl: await app.listen({ port: 0, host: '127.0.0.1' }), projectId })
  const sdkStart = new URL(await client.auth.oauthStartUrl('backup', `${APP_ORIGIN}/done`))
  const sdkLanding = (await signIn('dave', 'backup', `${sdkStart.pathname}${sdkStart.search}`)).location
  t.ok(sdkLanding.searchParams.get('plinthFlow'), 'the SDK named its sign-in in the landing URL')
  await client.auth.exchangeOauthTicket(sdkLanding.href)
  t.match(await client.auth.oauthIdentities(), [{ provider: 'backup', email: 'dave@example.com' }], 'the SDK lists them')
  await t.rejects(client.auth.unlinkOauthIdentity('backup'), { code: 'APP_OAUTH_LAST_SIGN_IN_METHOD' }, 'and is refused the last one')
})

t.test('a disabled provider starts no sign-in', async (t) => {
  t.equal((await call(app, 'PUT', providerUrl, admin.auth, { issuer: opUrl, clientId: CLIENT.id, enabled: false })).status, 200, 'the sealed secret is kept')
  const refused = await app.inject({ url: `${auth}/corp/start?redirectTo=${encodeURIComponent(`${APP_ORIGIN}/done`)}&codeChallenge=${CHALLENGE}` })
  t.equal(refused.statusCode, 403)
  t.equal(refused.json().code, 'APP_OAUTH_PROVIDER_DISABLED')
  t.same((await app.inject({ url: `${auth}/providers` })).json().data, [])
})
