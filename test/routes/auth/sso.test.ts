import t from 'tap'
import { createHash } from 'node:crypto'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { SignJWT, exportJWK, generateKeyPair, type CryptoKey, type JWTPayload } from 'jose'
// @ts-expect-error oidc-provider publishes no type declarations; the few members used are typed below.
import OidcProviderModule from 'oidc-provider'
import { buildTestApp } from '../../helper.js'
import { hashToken } from '../../../services/platform/crypto.js'
import { authorizeAtProvider, type ProviderOutcome } from '../../fixtures/oidc-browser.js'

/**
 * A real OpenID provider (oidc-provider, with its development login and
 * consent pages) on loopback plays Google (query callback) and Apple
 * (form_post); a small hand-written issuer plays Microsoft's tenant-templated
 * issuer and hands out crafted ID tokens for the forgery cases.
 */

type App = Awaited<ReturnType<typeof buildTestApp>>
type Handler = (request: IncomingMessage, response: ServerResponse) => void
interface OidcProvider { callback (): Handler }
const OidcProviderClass = OidcProviderModule as new (issuer: string, configuration: Record<string, unknown>) => OidcProvider

const PUBLIC_URL = 'http://plinth.test'
const LANDING = 'http://app.test/signed-in'
const OTHER_ORIGIN = 'http://other.test'
const TENANT = '72f988bf-86f1-41af-91ab-2d7cd011db47'
const json = { 'content-type': 'application/json' }
const formType = { 'content-type': 'application/x-www-form-urlencoded' }
const callbackUrl = (provider: string) => `${PUBLIC_URL}/api/auth/oauth/${provider}/callback`

const GOOGLE = { id: 'plinth-google', secret: 'google secret: with+odd/chars%' }
const APPLE = { id: 'plinth-apple', secret: 'apple-client-secret-jwt' }
const MICROSOFT = { id: 'plinth-microsoft', secret: 'microsoft-secret' }

async function listen (handler: Handler): Promise<string> {
  const server = createServer(handler)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  // Unreferenced, so the servers do not keep the process alive once the tests are done.
  server.unref()
  t.teardown(() => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()) }))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

// --- the real provider --------------------------------------------------------------------------------------------

let providerHandler: Handler = () => {}
const opUrl = await listen((request, response) => providerHandler(request, response))
const opKey = await generateKeyPair('RS256', { extractable: true })
const provider = new OidcProviderClass(opUrl, {
  clients: [
    { client_id: GOOGLE.id, client_secret: GOOGLE.secret, redirect_uris: [callbackUrl('google')], token_endpoint_auth_method: 'client_secret_basic' },
    { client_id: APPLE.id, client_secret: APPLE.secret, redirect_uris: [callbackUrl('apple')], token_endpoint_auth_method: 'client_secret_post' }
  ],
  jwks: { keys: [{ ...await exportJWK(opKey.privateKey), kid: 'op-1', alg: 'RS256', use: 'sig' }] },
  pkce: { required: () => true },
  // Like Google and Apple: the scope's claims go into the ID token itself, not only into userinfo.
  conformIdTokenClaims: false,
  claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
  cookies: { keys: ['test-only-cookie-key'] },
  // The account id typed into the login page decides the claims: `unverified-*` has an unproven address, `apple-*` no name.
  findAccount: (_ctx: unknown, id: string) => ({
    accountId: id,
    claims: () => ({ sub: id, email: `${id}@example.com`, email_verified: !id.startsWith('unverified'), ...(id.startsWith('apple-') ? {} : { name: `User ${id}` }) })
  })
})
providerHandler = provider.callback()

// --- a hand-written Microsoft-shaped issuer ---------------------------------------------------------------------------

const msKey = await generateKeyPair('RS256')
const msJwk = { ...await exportJWK(msKey.publicKey), kid: 'ms-1', alg: 'RS256', use: 'sig' }
const msCodes = new Map<string, { challenge: string, idToken: string }>()
const msUrl = await listen((request, response) => { msIssuer(request, response).catch(() => { response.statusCode = 500; response.end() }) })
const msIssuerTemplate = `${msUrl}/{tenantid}/v2.0`

async function msIssuer (request: IncomingMessage, response: ServerResponse): Promise<void> {
  const send = (status: number, body: unknown) => { response.writeHead(status, json); response.end(JSON.stringify(body)) }
  const path = new URL(request.url ?? '/', msUrl).pathname
  if (path === '/common/v2.0/.well-known/openid-configuration') {
    return send(200, { issuer: msIssuerTemplate, authorization_endpoint: `${msUrl}/authorize`, token_endpoint: `${msUrl}/token`, jwks_uri: `${msUrl}/keys` })
  }
  if (path === '/keys') return send(200, { keys: [msJwk] })
  if (path !== '/token' || request.method !== 'POST') return send(404, { error: 'not_found' })
  let body = ''
  for await (const chunk of request) body += String(chunk)
  const form = new URLSearchParams(body)
  const grant = msCodes.get(form.get('code') ?? '')
  msCodes.delete(form.get('code') ?? '')
  if (form.get('client_id') !== MICROSOFT.id || form.get('client_secret') !== MICROSOFT.secret) return send(401, { error: 'invalid_client' })
  const verifier = form.get('code_verifier') ?? ''
  if (grant === undefined || form.get('redirect_uri') !== callbackUrl('microsoft') || createHash('sha256').update(verifier).digest('base64url') !== grant.challenge) {
    return send(400, { error: 'invalid_grant' })
  }
  send(200, { access_token: 'unused', token_type: 'Bearer', expires_in: 3600, id_token: grant.idToken })
}

// --- the browser ------------------------------------------------------------------------------------------------------

/** The browser at the provider, signing in as `login` (or aborting when null). */
const authorize = async (authorizationUrl: string, login: string | null): Promise<ProviderOutcome> => await authorizeAtProvider(opUrl, authorizationUrl, login)

// --- Plinth side helpers ----------------------------------------------------------------------------------------------

const env = {
  PUBLIC_URL,
  // The providers are on loopback, an internal address the guard refuses unless allowed.
  SSO_ALLOWED_HOSTS: '127.0.0.1',
  SSO_REDIRECT_URL: LANDING,
  SSO_ALLOWED_REDIRECTS: `${OTHER_ORIGIN}, https://another.test`,
  GOOGLE_CLIENT_ID: GOOGLE.id,
  GOOGLE_CLIENT_SECRET: GOOGLE.secret,
  GOOGLE_ISSUER: opUrl,
  APPLE_CLIENT_ID: APPLE.id,
  APPLE_CLIENT_SECRET: APPLE.secret,
  APPLE_ISSUER: opUrl,
  MICROSOFT_CLIENT_ID: MICROSOFT.id,
  MICROSOFT_CLIENT_SECRET: MICROSOFT.secret,
  MICROSOFT_ISSUER: `${msUrl}/common/v2.0`
}

/** The app's PKCE verifier, one for every sign-in here; its S256 challenge starts them. */
const VERIFIER = 'the-app-keeps-this-verifier-for-its-ticket-exchange'
const CHALLENGE = createHash('sha256').update(VERIFIER).digest('base64url')
/** The browser's cookies at Plinth: one per sign-in started, named by its flow. */
const jar = new Map<string, string>()
const browser = () => ({ cookie: [...jar].map(([name, value]) => `${name}=${value}`).join('; ') })

function keepCookies (response: { headers: Record<string, unknown> }): void {
  const header = response.headers['set-cookie']
  for (const line of header === undefined ? [] : Array.isArray(header) ? header as string[] : [String(header)]) {
    const pair = line.split(';')[0]
    const [name, value] = [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]
    if (value === '') jar.delete(name)
    else jar.set(name, value)
  }
}

async function start (app: App, provider: string, query = ''): Promise<URL> {
  const response = await app.inject({ url: `/api/auth/oauth/${provider}/start${query === '' ? '?' : `${query}&`}codeChallenge=${CHALLENGE}` })
  if (response.statusCode !== 302) throw new Error(`start answered ${response.statusCode}: ${response.body}`)
  keepCookies(response)
  return new URL(response.headers.location as string)
}

/** A callback in the browser that started the sign-ins. */
async function callback (app: App, url: string) {
  const response = await app.inject({ url, headers: browser() })
  keepCookies(response)
  return response
}

async function deliver (app: App, outcome: ProviderOutcome): Promise<URL> {
  if ('redirect' in outcome && outcome.redirect.origin !== PUBLIC_URL) throw new Error(`the provider sent the browser to ${outcome.redirect.href}`)
  let response
  if ('redirect' in outcome) {
    response = await callback(app, `${outcome.redirect.pathname}${outcome.redirect.search}`)
  } else {
    // A cross-site form post carries no SameSite=Lax cookie: the callback sends the browser on to itself by GET.
    const posted = await app.inject({ method: 'POST', url: outcome.formPost.action.pathname, headers: formType, payload: new URLSearchParams(outcome.formPost.fields).toString() })
    if (posted.statusCode !== 303) throw new Error(`the form callback answered ${posted.statusCode}: ${posted.body}`)
    response = await callback(app, posted.headers.location as string)
  }
  if (response.statusCode !== 302) throw new Error(`callback answered ${response.statusCode}: ${response.body}`)
  return new URL(response.headers.location as string)
}

async function signIn (app: App, provider: 'google' | 'apple', login: string | null, query = '') {
  const outcome = await authorize((await start(app, provider, query)).href, login)
  return { outcome, landing: await deliver(app, outcome) }
}

async function exchange (app: App, ticket: string, codeVerifier = VERIFIER) {
  return await app.inject({ method: 'POST', url: '/api/auth/oauth/exchange', headers: json, payload: { ticket, codeVerifier } })
}

const landingOf = (url: URL) => `${url.origin}${url.pathname}`

// --- tests ------------------------------------------------------------------------------------------------------------

t.test('Google-style: query callback, ticket exchange, /me, one-time ticket and state', async (t) => {
  const app = await buildTestApp(t, { env })
  const authorization = await start(app, 'google')
  t.equal(`${authorization.origin}${authorization.pathname}`, `${opUrl}/auth`, 'the discovered authorization endpoint')
  t.match(Object.fromEntries(authorization.searchParams), {
    response_type: 'code',
    client_id: GOOGLE.id,
    redirect_uri: callbackUrl('google'),
    scope: 'openid email profile',
    code_challenge_method: 'S256',
    state: /^[\w-]{43}$/,
    nonce: /^[\w-]{43}$/,
    code_challenge: /^[\w-]{43}$/
  })
  t.notOk(authorization.searchParams.has('response_mode'), 'Google answers by query')

  const outcome = await authorize(authorization.href, 'ada')
  t.ok('redirect' in outcome, 'the provider redirects back with a query')
  const landing = await deliver(app, outcome)
  t.equal(landingOf(landing), LANDING)
  const ticket = landing.searchParams.get('ticket') ?? ''
  t.match(ticket, /^[\w-]{43}$/, 'a ticket, no error')
  t.ok(await app.store.collection('sso_tickets').findOne({ _id: hashToken(ticket) }), 'only the ticket\'s hash is stored')

  const session = await exchange(app, ticket)
  t.equal(session.statusCode, 200)
  const data = session.json().data
  t.match(data, { user: { email: 'ada@example.com', name: 'User ada', emailVerified: true }, tokenType: 'Bearer', expiresIn: 900, refreshToken: String, refreshExpiresAt: String })
  const me = await app.inject({ url: '/api/auth/me', headers: { authorization: `Bearer ${data.accessToken}` } })
  t.equal(me.statusCode, 200)
  t.same(me.json().data, data.user)
  t.equal((await app.inject({ method: 'POST', url: '/api/auth/refresh', headers: json, payload: { refreshToken: data.refreshToken } })).statusCode, 200, 'the refresh token works')

  const replayedTicket = await exchange(app, ticket)
  t.equal(replayedTicket.statusCode, 401, 'a ticket works once')
  t.equal(replayedTicket.json().code, 'APP_INVALID_SSO_TICKET')

  const replayedState = await deliver(app, outcome)
  t.equal(landingOf(replayedState), LANDING)
  t.equal(replayedState.searchParams.get('error'), 'APP_SSO_INVALID_STATE', 'a state works once')
  t.notOk(replayedState.searchParams.has('ticket'))

  const again = await signIn(app, 'google', 'ada')
  const second = (await exchange(app, again.landing.searchParams.get('ticket') ?? '')).json().data
  t.equal(second.user.id, data.user.id, 'a second sign-in finds the same user')
  t.equal(await app.identity.users.records.countDocuments({ email: 'ada@example.com' }), 1)
})

t.test('Apple-style: form_post callback with client_secret_post, name from the user field', async (t) => {
  const app = await buildTestApp(t, { env })
  const authorization = await start(app, 'apple')
  t.match(Object.fromEntries(authorization.searchParams), { response_mode: 'form_post', scope: 'openid email name', client_id: APPLE.id, redirect_uri: callbackUrl('apple') })
  const outcome = await authorize(authorization.href, 'apple-grace')
  if (!('formPost' in outcome)) throw new Error('expected a form post')
  t.equal(outcome.formPost.action.href, callbackUrl('apple'))
  t.match(outcome.formPost.fields, { code: String, state: authorization.searchParams.get('state') })
  // Apple adds the name, once, as a JSON string beside the code.
  const withUser = { formPost: { ...outcome.formPost, fields: { ...outcome.formPost.fields, user: JSON.stringify({ name: { firstName: 'Grace', lastName: 'Hopper' }, email: 'apple-grace@example.com' }) } } }
  const landing = await deliver(app, withUser)
  const session = await exchange(app, landing.searchParams.get('ticket') ?? '')
  t.equal(session.statusCode, 200)
  t.match(session.json().data.user, { email: 'apple-grace@example.com', name: 'Grace Hopper', emailVerified: true })

  const oversized = await app.inject({ method: 'POST', url: '/api/auth/oauth/apple/callback', headers: formType, payload: `state=${'x'.repeat(20_000)}` })
  t.equal(oversized.statusCode, 413, 'the form parser has its own size limit')
  t.equal(oversized.json().code, 'APP_PAYLOAD_TOO_LARGE')
  const formOnExchange = await app.inject({ method: 'POST', url: '/api/auth/oauth/exchange', headers: formType, payload: 'ticket=x' })
  t.equal(formOnExchange.statusCode, 415, 'only the callback takes forms')
})

t.test('redirectTo, provider errors and unverified addresses', async (t) => {
  const app = await buildTestApp(t, { env })
  const elsewhere = await signIn(app, 'google', 'bob', `?redirectTo=${encodeURIComponent(`${OTHER_ORIGIN}/after?x=1`)}`)
  t.equal(landingOf(elsewhere.landing), `${OTHER_ORIGIN}/after`, 'lands on the allowed redirectTo')
  t.equal(elsewhere.landing.searchParams.get('x'), '1', 'keeping its own query')
  t.ok(elsewhere.landing.searchParams.get('ticket'))

  for (const redirectTo of ['http://evil.test/', 'javascript:alert(1)', '/relative', `${OTHER_ORIGIN}.evil.test/`, 'https://other.test/']) {
    const response = await app.inject({ url: `/api/auth/oauth/google/start?redirectTo=${encodeURIComponent(redirectTo)}&codeChallenge=${CHALLENGE}` })
    t.equal(response.statusCode, 400, `${redirectTo}: 400`)
    t.equal(response.json().code, 'APP_SSO_REDIRECT_NOT_ALLOWED')
  }

  const aborted = await signIn(app, 'google', null, `?redirectTo=${encodeURIComponent(`${OTHER_ORIGIN}/after`)}`)
  t.equal(landingOf(aborted.landing), `${OTHER_ORIGIN}/after`, 'errors land on the redirectTo too')
  t.equal(aborted.landing.searchParams.get('error'), 'APP_SSO_PROVIDER_ERROR', 'the user cancelled at the provider')

  const unverified = await signIn(app, 'google', 'unverified-carol')
  t.equal(unverified.landing.searchParams.get('error'), 'APP_SSO_EMAIL_NOT_VERIFIED')
  t.equal(await app.identity.users.records.countDocuments({ email: 'unverified-carol@example.com' }), 0, 'no user is created')

  const bare = await callback(app, '/api/auth/oauth/google/callback')
  t.equal(bare.statusCode, 302)
  t.equal(new URL(bare.headers.location as string).searchParams.get('error'), 'APP_SSO_INVALID_STATE')
  const wrongProvider = await start(app, 'google')
  const crossed = await callback(app, `/api/auth/oauth/apple/callback?code=x&state=${wrongProvider.searchParams.get('state') ?? ''}`)
  t.equal(new URL(crossed.headers.location as string).searchParams.get('error'), 'APP_SSO_INVALID_STATE', 'a state belongs to its provider')
  for (const [name, query] of [['another issuer named in the response (RFC 9207)', 'code=x&iss=https%3A%2F%2Fevil.test'], ['no code', '']]) {
    const state = (await start(app, 'google')).searchParams.get('state') ?? ''
    const response = await callback(app, `/api/auth/oauth/google/callback?state=${state}&${query}`)
    t.equal(new URL(response.headers.location as string).searchParams.get('error'), 'APP_SSO_INVALID_RESPONSE', name)
  }
})

t.test('an unverified account with a password is taken over, its password dropped', async (t) => {
  const app = await buildTestApp(t, { env })
  const password = 'attacker chose this'
  const squatter = await app.inject({ method: 'POST', url: '/api/auth/register', headers: json, payload: { email: 'victim@example.com', password, name: 'Squatter' } })
  t.equal(squatter.statusCode, 201)
  t.equal((await app.inject({ method: 'POST', url: '/api/auth/login', headers: json, payload: { email: 'victim@example.com', password } })).statusCode, 200, 'the pre-registered password works before')

  const { landing } = await signIn(app, 'google', 'victim')
  const session = (await exchange(app, landing.searchParams.get('ticket') ?? '')).json().data
  t.equal(session.user.id, squatter.json().data.id, 'the existing account is linked')
  t.equal(session.user.emailVerified, true)
  const stored = await app.identity.users.records.findOne({ email: 'victim@example.com' })
  t.equal(stored?.passwordHash, null, 'the password is gone')
  const login = await app.inject({ method: 'POST', url: '/api/auth/login', headers: json, payload: { email: 'victim@example.com', password } })
  t.equal(login.statusCode, 401, 'the squatter\'s password no longer logs in')

  const keeper = await app.inject({ method: 'POST', url: '/api/auth/register', headers: json, payload: { email: 'keeper@example.com', password: 'keeper password', name: 'Keeper' } })
  await app.identity.users.records.updateOne({ _id: keeper.json().data.id }, { $set: { emailVerified: true } })
  await signIn(app, 'google', 'keeper')
  const kept = await app.inject({ method: 'POST', url: '/api/auth/login', headers: json, payload: { email: 'keeper@example.com', password: 'keeper password' } })
  t.equal(kept.statusCode, 200, 'a verified account keeps its password')
})

t.test('a takeover revokes every credential issued before it: sessions, access tokens, PATs, SSH keys', async (t) => {
  const app = await buildTestApp(t, { env })
  const password = 'attacker chose this'
  await app.inject({ method: 'POST', url: '/api/auth/register', headers: json, payload: { email: 'victim@example.com', password, name: 'Squatter' } })
  const squatter = (await app.inject({ method: 'POST', url: '/api/auth/login', headers: json, payload: { email: 'victim@example.com', password } })).json().data
  const asSquatter = { ...json, authorization: `Bearer ${squatter.accessToken as string}` }
  const pat = (await app.inject({ method: 'POST', url: '/api/auth/api-keys', headers: asSquatter, payload: { name: 'kept' } })).json().data.token as string
  const sshKey = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl'
  t.equal((await app.inject({ method: 'POST', url: '/api/auth/ssh-keys', headers: asSquatter, payload: { title: 'squatter', key: sshKey } })).statusCode, 201)
  t.equal((await app.inject({ url: '/api/auth/me', headers: { authorization: `Bearer ${pat}` } })).statusCode, 200, 'before: the PAT works')

  const { landing } = await signIn(app, 'google', 'victim')
  const owner = (await exchange(app, landing.searchParams.get('ticket') ?? '')).json().data
  t.equal(owner.user.email, 'victim@example.com')

  t.equal((await app.inject({ url: '/api/auth/me', headers: asSquatter })).statusCode, 401, 'the squatter\'s access token is refused at once, long before it expires')
  const refreshed = await app.inject({ method: 'POST', url: '/api/auth/refresh', headers: json, payload: { refreshToken: squatter.refreshToken } })
  t.same([refreshed.statusCode, refreshed.json().code], [401, 'APP_INVALID_REFRESH_TOKEN'], 'the squatter\'s refresh token is dead')
  t.equal((await app.inject({ url: '/api/auth/me', headers: { authorization: `Bearer ${pat}` } })).statusCode, 401, 'the squatter\'s PAT is revoked')
  const asOwner = { authorization: `Bearer ${owner.accessToken as string}` }
  t.same((await app.inject({ url: '/api/auth/ssh-keys', headers: asOwner })).json().data, [], 'the squatter\'s SSH key is gone')
  t.same((await app.inject({ url: '/api/auth/api-keys', headers: asOwner })).json().data, [], 'and no PAT is left')
  t.equal((await app.inject({ url: '/api/auth/me', headers: asOwner })).statusCode, 200, 'the owner\'s own session works')
  t.equal((await app.inject({ method: 'POST', url: '/api/auth/login', headers: json, payload: { email: 'victim@example.com', password } })).statusCode, 401, 'and the password is gone')

  const { landing: again } = await signIn(app, 'google', 'victim')
  t.equal((await exchange(app, again.searchParams.get('ticket') ?? '')).statusCode, 200)
  t.equal((await app.inject({ url: '/api/auth/me', headers: asOwner })).statusCode, 200, 'a later SSO sign-in of the verified owner takes nothing away')
})

t.test('tickets: expired, unknown, rate-limited', async (t) => {
  const app = await buildTestApp(t, { env: { ...env, AUTH_RATE_LIMIT_MAX: '4', AUTH_RATE_LIMIT_WINDOW_SECONDS: '600' } })
  const { landing } = await signIn(app, 'google', 'dora')
  const ticket = landing.searchParams.get('ticket') ?? ''
  const record = await app.store.collection('sso_tickets').findOne({ _id: hashToken(ticket) })
  t.ok(record !== null && (record.expiresAt as Date).getTime() - Date.now() <= 60_000, 'a ticket lives 60 s')
  await app.store.collection('sso_tickets').updateOne({ _id: hashToken(ticket) }, { $set: { expiresAt: new Date(Date.now() - 1000) } })
  const statuses: Array<[number, string]> = []
  for (const attempt of [ticket, 'never-issued', 'x'.repeat(43), 'never-issued', 'one-more']) {
    const response = await exchange(app, attempt)
    statuses.push([response.statusCode, response.json().code])
  }
  t.same(statuses, [
    [401, 'APP_INVALID_SSO_TICKET'], [401, 'APP_INVALID_SSO_TICKET'], [401, 'APP_INVALID_SSO_TICKET'], [401, 'APP_INVALID_SSO_TICKET'], [429, 'APP_RATE_LIMITED']
  ], 'expired and unknown tickets are refused, and guessing is rate-limited')
  const badBody = await app.inject({ method: 'POST', url: '/api/auth/oauth/exchange', headers: json, payload: { ticket: '' } })
  t.equal(badBody.statusCode, 400)
})

t.test('bound to the client that started it: a stolen landing URL or callback URL is worth nothing elsewhere', async (t) => {
  const app = await buildTestApp(t, { env })
  const noChallenge = await app.inject({ url: '/api/auth/oauth/google/start' })
  t.same([noChallenge.statusCode, noChallenge.json().code], [400, 'APP_VALIDATION_FAILED'], 'start needs the app\'s PKCE challenge')
  const started = await app.inject({ url: `/api/auth/oauth/google/start?codeChallenge=${CHALLENGE}` })
  t.match(started.headers['set-cookie'], /^plinth_oauth_[\w-]{16}=[\w-]{43}; Path=\/api\/auth\/oauth\/; Max-Age=600; HttpOnly; SameSite=Lax$/, 'the state is bound to this browser')

  // The landing URL's ticket, read by another client (history, a referrer, a log, a link sent to a victim).
  const { landing } = await signIn(app, 'google', 'gina')
  const stolen = landing.searchParams.get('ticket') ?? ''
  const otherVerifier = 'another-client-made-up-this-verifier-of-its-own-1234'
  const thief = await exchange(app, stolen, otherVerifier)
  t.same([thief.statusCode, thief.json().code], [401, 'APP_INVALID_SSO_TICKET'], 'another client\'s verifier does not trade it')
  const owner = await exchange(app, stolen)
  t.same([owner.statusCode, owner.json().code], [401, 'APP_INVALID_SSO_TICKET'], 'and the attempt used it up')
  const missing = await app.inject({ method: 'POST', url: '/api/auth/oauth/exchange', headers: json, payload: { ticket: stolen } })
  t.same([missing.statusCode, missing.json().code], [400, 'APP_VALIDATION_FAILED'], 'no verifier, no exchange')

  // The provider's callback URL, completed in another browser (login CSRF): it lacks the cookie.
  const outcome = await authorize((await start(app, 'google')).href, 'gina')
  if (!('redirect' in outcome)) throw new Error('expected a redirect')
  const elsewhere = await app.inject({ url: `${outcome.redirect.pathname}${outcome.redirect.search}` })
  t.equal(new URL(elsewhere.headers.location as string).searchParams.get('error'), 'APP_SSO_INVALID_STATE', 'another browser completes nothing')
  const consumed = await deliver(app, outcome)
  t.equal(consumed.searchParams.get('error'), 'APP_SSO_INVALID_STATE', 'and the state is spent by the attempt')

  const unknownForm = await app.inject({ method: 'POST', url: '/api/auth/oauth/github/callback', headers: formType, payload: 'code=x&state=y' })
  t.same([unknownForm.statusCode, unknownForm.json().code], [404, 'APP_SSO_PROVIDER_NOT_FOUND'], 'a form post to an unknown provider')
})

t.test('providers: the list, unknown and unconfigured ones, an unreachable one', async (t) => {
  const app = await buildTestApp(t, { env: { PUBLIC_URL, SSO_ALLOWED_HOSTS: '127.0.0.1', GOOGLE_CLIENT_ID: GOOGLE.id, GOOGLE_CLIENT_SECRET: GOOGLE.secret, GOOGLE_ISSUER: opUrl, APPLE_CLIENT_ID: 'a', APPLE_CLIENT_SECRET: 'b', APPLE_ISSUER: 'http://127.0.0.1:1' } })
  const list = await app.inject({ url: '/api/auth/oauth/providers' })
  t.equal(list.statusCode, 200)
  t.same(list.json().data, [
    { id: 'google', name: 'Google', startUrl: '/api/auth/oauth/google/start' },
    { id: 'apple', name: 'Apple', startUrl: '/api/auth/oauth/apple/start' }
  ])
  const cases: Array<[string, string]> = [
    ['unknown', `/api/auth/oauth/github/start?codeChallenge=${CHALLENGE}`],
    ['not configured here', `/api/auth/oauth/microsoft/start?codeChallenge=${CHALLENGE}`],
    ['callback of an unconfigured provider', '/api/auth/oauth/microsoft/callback?code=x&state=y']
  ]
  for (const [name, url] of cases) {
    const response = await app.inject({ url })
    t.equal(response.statusCode, 404, `${name}: 404`)
    t.equal(response.json().code, 'APP_SSO_PROVIDER_NOT_FOUND', `${name}: code`)
  }
  const unreachable = await app.inject({ url: `/api/auth/oauth/apple/start?codeChallenge=${CHALLENGE}` })
  t.equal(unreachable.statusCode, 302, 'an unreachable provider is a redirect, not a 500')
  t.equal(new URL(unreachable.headers.location as string).href, `${PUBLIC_URL}/?error=APP_SSO_PROVIDER_UNAVAILABLE`, 'to SSO_REDIRECT_URL, which defaults to PUBLIC_URL/')

  const none = await buildTestApp(t)
  t.same((await none.inject({ url: '/api/auth/oauth/providers' })).json(), { success: true, data: [] })
})

t.test('Microsoft-style tenant issuer and crafted ID tokens', async (t) => {
  const app = await buildTestApp(t, { env })
  const otherKey = await generateKeyPair('RS256')
  let n = 0

  /** Starts a sign-in, lets the issuer answer the code with the token `craft` makes, and returns where the browser lands. */
  async function attempt (email: string, craft: (claims: JWTPayload) => Promise<string>) {
    const authorization = await start(app, 'microsoft')
    t.equal(authorization.searchParams.get('code_challenge_method'), 'S256')
    const nonce = authorization.searchParams.get('nonce') ?? ''
    const now = Math.floor(Date.now() / 1000)
    const claims: JWTPayload = {
      iss: `${msUrl}/${TENANT}/v2.0`, aud: MICROSOFT.id, sub: `sub-${email}`, tid: TENANT, nonce, iat: now, exp: now + 600, email, email_verified: true, name: 'Ms User'
    }
    const code = `code-${++n}`
    msCodes.set(code, { challenge: authorization.searchParams.get('code_challenge') ?? '', idToken: await craft(claims) })
    const response = await callback(app, `/api/auth/oauth/microsoft/callback?code=${code}&state=${authorization.searchParams.get('state') ?? ''}`)
    t.equal(response.statusCode, 302)
    return new URL(response.headers.location as string)
  }
  const sign = (key: CryptoKey, kid = 'ms-1') => async (claims: JWTPayload) => await new SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid }).sign(key)
  const signWith = (changes: JWTPayload, key: CryptoKey = msKey.privateKey) => async (claims: JWTPayload) => await sign(key)({ ...claims, ...changes })

  const good = await attempt('erin@example.com', sign(msKey.privateKey))
  const ticket = good.searchParams.get('ticket')
  t.ok(ticket, 'the issuer template filled with the token\'s tid is accepted')
  t.equal((await exchange(app, ticket ?? '')).json().data.user.email, 'erin@example.com')
  const asString = await attempt('frank@example.com', signWith({ email_verified: 'true' }))
  t.ok(asString.searchParams.get('ticket'), 'email_verified as the string "true" (Apple) counts')

  const refusals: Array<[string, string, (claims: JWTPayload) => Promise<string>]> = [
    ['signed with another key', 'APP_SSO_INVALID_ID_TOKEN', sign(otherKey.privateKey)],
    ['another key under an unknown kid', 'APP_SSO_INVALID_ID_TOKEN', sign(otherKey.privateKey, 'ms-2')],
    ['HS256 under the client secret', 'APP_SSO_INVALID_ID_TOKEN', async (claims) => await new SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).sign(new TextEncoder().encode(MICROSOFT.secret))],
    ['wrong nonce', 'APP_SSO_INVALID_ID_TOKEN', signWith({ nonce: 'another-sign-in' })],
    ['no nonce', 'APP_SSO_INVALID_ID_TOKEN', signWith({ nonce: undefined })],
    ['issuer of another tenant than tid', 'APP_SSO_INVALID_ID_TOKEN', signWith({ iss: `${msUrl}/00000000-0000-0000-0000-000000000000/v2.0` })],
    ['issuer template left unfilled', 'APP_SSO_INVALID_ID_TOKEN', signWith({ iss: msIssuerTemplate, tid: undefined })],
    ['audience of another client', 'APP_SSO_INVALID_ID_TOKEN', signWith({ aud: 'someone-else' })],
    ['several audiences without azp', 'APP_SSO_INVALID_ID_TOKEN', signWith({ aud: [MICROSOFT.id, 'someone-else'] })],
    ['expired', 'APP_SSO_INVALID_ID_TOKEN', signWith({ iat: Math.floor(Date.now() / 1000) - 7200, exp: Math.floor(Date.now() / 1000) - 3600 })],
    ['email not verified', 'APP_SSO_EMAIL_NOT_VERIFIED', signWith({ email_verified: false })],
    ['email_verified missing', 'APP_SSO_EMAIL_NOT_VERIFIED', signWith({ email_verified: undefined })],
    ['not a JWT', 'APP_SSO_INVALID_ID_TOKEN', async () => 'not.a.jwt']
  ]
  for (const [name, code, craft] of refusals) {
    const email = `${name.replace(/\W+/g, '-')}@example.com`
    const landing = await attempt(email, craft)
    t.equal(landing.searchParams.get('error'), code, `${name}: ${code}`)
    t.notOk(landing.searchParams.has('ticket'), `${name}: no ticket`)
    t.equal(await app.identity.users.records.countDocuments({ email }), 0, `${name}: no user created`)
  }

  const reused = await callback(app, `/api/auth/oauth/microsoft/callback?code=code-1&state=${(await start(app, 'microsoft')).searchParams.get('state') ?? ''}`)
  t.equal(new URL(reused.headers.location as string).searchParams.get('error'), 'APP_SSO_CODE_REJECTED', 'a code the issuer refuses')
})

t.test('every provider call goes through the address guard: a provider on an internal address is refused unless allowed', async (t) => {
  const { SSO_ALLOWED_HOSTS: _allowed, ...unguarded } = env
  const app = await buildTestApp(t, { env: unguarded })
  const refused = await app.inject({ url: `/api/auth/oauth/google/start?codeChallenge=${CHALLENGE}` })
  t.equal(refused.statusCode, 302)
  t.equal(new URL(refused.headers.location as string).href, `${LANDING}?error=APP_SSO_PROVIDER_UNAVAILABLE`, 'discovery on loopback is not fetched')
  const allowed = await buildTestApp(t, { env })
  t.equal(new URL((await allowed.inject({ url: `/api/auth/oauth/google/start?codeChallenge=${CHALLENGE}` })).headers.location as string).origin, opUrl, 'allowed by SSO_ALLOWED_HOSTS, it is')
})
