import t from 'tap'
import { createHash } from 'node:crypto'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { SignJWT, exportJWK, exportPKCS8, generateKeyPair, jwtVerify } from 'jose'
import { buildTestApp, call, signUp } from '../../helper.js'

/**
 * The GitHub and Apple presets against loopback servers that speak their
 * protocols: GitHub's OAuth 2 (a token, then /user and /user/emails) and
 * Apple's OpenID flow (form_post, a client secret that is an ES256 JWT).
 */

const PUBLIC_URL = 'http://plinth.test'
const APP_ORIGIN = 'http://app.test'
const VERIFIER = 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk'
const CHALLENGE = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM'
const json = { 'content-type': 'application/json' }
type Handler = (request: IncomingMessage, response: ServerResponse, body: URLSearchParams) => Promise<void>

async function listen (handler: Handler): Promise<string> {
  const server = createServer((request, response) => {
    let body = ''
    request.on('data', (chunk) => { body += String(chunk) })
    request.on('end', () => { handler(request, response, new URLSearchParams(body)).catch(() => { response.statusCode = 500; response.end() }) })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  server.unref()
  t.teardown(() => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()) }))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}
const send = (response: ServerResponse, status: number, body: unknown) => { response.writeHead(status, json); response.end(JSON.stringify(body)) }

// --- GitHub: codes issued for a login, whose emails decide the case --------------------------------------------------
const GH = { id: 'gh-client', secret: 'gh-secret' }
const ghCodes = new Map<string, { login: string, challenge: string }>()
const ghEmails: Record<string, unknown[]> = {
  octo: [{ email: 'public@example.com', primary: false, verified: true }, { email: 'octo@example.com', primary: true, verified: true }],
  sneaky: [{ email: 'victim@example.com', primary: true, verified: false }, { email: 'sneaky@example.com', primary: false, verified: true }]
}
const github = await listen(async (request, response, form) => {
  const url = new URL(request.url ?? '/', 'http://x')
  if (url.pathname === '/login/oauth/access_token') {
    const grant = ghCodes.get(form.get('code') ?? '')
    ghCodes.delete(form.get('code') ?? '')
    const verifierOk = grant !== undefined && createHash('sha256').update(form.get('code_verifier') ?? '').digest('base64url') === grant.challenge
    // GitHub answers a bad code with 200 and an error field.
    if (form.get('client_secret') !== GH.secret || !verifierOk) return send(response, 200, { error: 'bad_verification_code' })
    return send(response, 200, { access_token: `token-${grant.login}`, token_type: 'bearer' })
  }
  const login = (request.headers.authorization ?? '').replace(/^Bearer token-/, '')
  if (!(login in ghEmails)) return send(response, 401, { message: 'Bad credentials' })
  if (url.pathname === '/api/user') return send(response, 200, { id: login.length * 1000, login, name: null })
  if (url.pathname === '/api/user/emails') return send(response, 200, ghEmails[login])
  send(response, 404, { message: 'Not Found' })
})

// --- Apple: discovery, keys, and a token endpoint that checks the signed client secret --------------------------------
const APPLE = { id: 'com.example.shop', teamId: 'TEAM123456', keyId: 'KEY1234567' }
const appleClientKey = await generateKeyPair('ES256', { extractable: true })
const appleSigning = await generateKeyPair('RS256')
const appleCodes = new Map<string, { challenge: string, nonce: string, email: string }>()
let apple = ''
apple = await listen(async (request, response, form) => {
  const path = new URL(request.url ?? '/', apple).pathname
  if (path === '/.well-known/openid-configuration') {
    return send(response, 200, { issuer: apple, authorization_endpoint: `${apple}/auth/authorize`, token_endpoint: `${apple}/auth/token`, jwks_uri: `${apple}/auth/keys` })
  }
  if (path === '/auth/keys') return send(response, 200, { keys: [{ ...await exportJWK(appleSigning.publicKey), kid: 'apple-1', alg: 'RS256', use: 'sig' }] })
  if (path !== '/auth/token') return send(response, 404, {})
  try {
    const { payload, protectedHeader } = await jwtVerify(form.get('client_secret') ?? '', appleClientKey.publicKey, { issuer: APPLE.teamId, subject: APPLE.id, audience: apple, algorithms: ['ES256'] })
    if (protectedHeader.kid !== APPLE.keyId || payload.exp === undefined) throw new Error('kid')
  } catch {
    return send(response, 400, { error: 'invalid_client' })
  }
  const grant = appleCodes.get(form.get('code') ?? '')
  if (grant === undefined || createHash('sha256').update(form.get('code_verifier') ?? '').digest('base64url') !== grant.challenge) return send(response, 400, { error: 'invalid_grant' })
  const now = Math.floor(Date.now() / 1000)
  const idToken = await new SignJWT({ email: grant.email, email_verified: 'true', is_private_email: 'false', nonce: grant.nonce })
    .setProtectedHeader({ alg: 'RS256', kid: 'apple-1' }).setIssuer(apple).setAudience(APPLE.id).setSubject(`apple-${grant.email}`).setIssuedAt(now).setExpirationTime(now + 600).sign(appleSigning.privateKey)
  send(response, 200, { access_token: 'a', token_type: 'Bearer', id_token: idToken })
})

const app = await buildTestApp(t, { env: { PUBLIC_URL, AUTH_RATE_LIMIT_MAX: '1000', PROJECT_OAUTH_ALLOWED_HOSTS: '127.0.0.1' } })
const admin = await signUp(app, 'admin@example.com')
const orgId = (await call(app, 'POST', '/api/organizations', admin.auth, { name: 'Acme' })).body.data.id as string
const projectId = (await call(app, 'POST', '/api/projects', admin.auth, { orgId, name: 'Shop' })).body.data.id as string
await call(app, 'POST', `/api/projects/${projectId}/auth/toggle`, admin.auth, { enabled: true })
await call(app, 'PUT', `/api/projects/${projectId}`, admin.auth, { allowedOrigins: [APP_ORIGIN] })
const auth = `/api/p/${projectId}/auth/oauth`
const providers = `/api/projects/${projectId}/auth/oauth-providers`

async function start (provider: string) {
  const started = await app.inject({ url: `${auth}/${provider}/start?redirectTo=${encodeURIComponent(`${APP_ORIGIN}/done`)}&codeChallenge=${CHALLENGE}` })
  if (started.statusCode !== 302) throw new Error(`start answered ${started.statusCode}: ${started.body}`)
  return { authorization: new URL(started.headers.location as string), cookie: String(started.headers['set-cookie']).split(';')[0] }
}
const ticketOf = (location: string) => new URL(location).searchParams

t.test('GitHub: OAuth 2, the user from the API, linked only by a verified primary address', async (t) => {
  const badApi = await call(app, 'PUT', `${providers}/gh`, admin.auth, { preset: 'github', issuer: github, clientId: GH.id, clientSecret: GH.secret, endpoints: { authorization: `${github}/a`, token: `${github}/t`, jwks: `${github}/j` } })
  t.same([badApi.status, badApi.body.code], [400, 'APP_VALIDATION_FAILED'], 'GitHub takes no OpenID endpoints')
  const inside = await call(app, 'PUT', `${providers}/gh`, admin.auth, { preset: 'github', issuer: github, apiUrl: 'http://10.9.8.7/api', clientId: GH.id, clientSecret: GH.secret })
  t.same([inside.status, inside.body.code], [400, 'APP_OAUTH_HOST_REFUSED'], 'the API URL passes the address guard')
  const saved = await call(app, 'PUT', `${providers}/gh`, admin.auth, { preset: 'github', issuer: github, apiUrl: `${github}/api`, clientId: GH.id, clientSecret: GH.secret })
  t.equal(saved.status, 200)
  t.match(saved.body.data, { preset: 'github', issuer: github, apiUrl: `${github}/api`, scopes: ['user:email', 'read:user'] })

  async function signIn (login: string) {
    const { authorization, cookie } = await start('gh')
    t.match(Object.fromEntries(authorization.searchParams), { client_id: GH.id, code_challenge_method: 'S256', scope: 'user:email read:user' })
    t.equal(`${authorization.origin}${authorization.pathname}`, `${github}/login/oauth/authorize`)
    const code = `code-${login}-${Math.random()}`
    ghCodes.set(code, { login, challenge: authorization.searchParams.get('code_challenge') ?? '' })
    const landed = await app.inject({ url: `${auth}/gh/callback?code=${code}&state=${authorization.searchParams.get('state') ?? ''}`, headers: { cookie } })
    return ticketOf(landed.headers.location as string)
  }
  const first = await signIn('octo')
  const session = await call(app, 'POST', `${auth}/exchange`, {}, { ticket: first.get('ticket'), codeVerifier: VERIFIER })
  t.equal(session.status, 200)
  t.equal(session.body.data.user.email, 'octo@example.com', 'the verified primary address, not another listed one')
  const again = await signIn('octo')
  const second = await call(app, 'POST', `${auth}/exchange`, {}, { ticket: again.get('ticket'), codeVerifier: VERIFIER })
  t.equal(second.body.data.user.id, session.body.data.user.id, 'a second sign-in finds the same user')

  await call(app, 'POST', `/api/p/${projectId}/auth/register`, {}, { email: 'victim@example.com', password: 'victim password 1' })
  const sneaky = await signIn('sneaky')
  t.equal(sneaky.get('error'), 'APP_SSO_EMAIL_NOT_VERIFIED', 'an unverified primary address links to nothing, though another address is verified')
  const refused = await signIn('nobody')
  t.equal(refused.get('error'), 'APP_SSO_PROVIDER_UNAVAILABLE', 'an API that refuses the token')
  const { authorization, cookie } = await start('gh')
  const badCode = await app.inject({ url: `${auth}/gh/callback?code=never-issued&state=${authorization.searchParams.get('state') ?? ''}`, headers: { cookie } })
  t.equal(ticketOf(badCode.headers.location as string).get('error'), 'APP_SSO_CODE_REJECTED', 'GitHub\'s 200 with an error field is a refused code')
})

t.test('Apple: form_post callback, a client secret signed ES256 with the sealed key, the email claims', async (t) => {
  const pem = await exportPKCS8(appleClientKey.privateKey)
  const noKeyIds = await call(app, 'PUT', `${providers}/apple`, admin.auth, { preset: 'apple', issuer: apple, clientId: APPLE.id, clientSecret: pem })
  t.same([noKeyIds.status, noKeyIds.body.code], [400, 'APP_VALIDATION_FAILED'], 'Apple needs the team and key ids')
  const notAKey = await call(app, 'PUT', `${providers}/apple`, admin.auth, { preset: 'apple', issuer: apple, clientId: APPLE.id, clientSecret: 'not a pem', apple: { teamId: APPLE.teamId, keyId: APPLE.keyId } })
  t.same([notAKey.status, notAKey.body.code], [400, 'APP_VALIDATION_FAILED'], 'the private key is checked when saved')
  const saved = await call(app, 'PUT', `${providers}/apple`, admin.auth, { preset: 'apple', issuer: apple, clientId: APPLE.id, clientSecret: pem, apple: { teamId: APPLE.teamId, keyId: APPLE.keyId } })
  t.equal(saved.status, 200)
  t.match(saved.body.data, { preset: 'apple', tokenEndpointAuth: 'client_secret_post', apple: { teamId: APPLE.teamId, keyId: APPLE.keyId } })
  t.notMatch(JSON.stringify(saved.body), 'PRIVATE KEY', 'the key is sealed and never answered')

  const { authorization, cookie } = await start('apple')
  t.match(Object.fromEntries(authorization.searchParams), { response_mode: 'form_post', client_id: APPLE.id, code_challenge_method: 'S256' })
  appleCodes.set('apple-code', { challenge: authorization.searchParams.get('code_challenge') ?? '', nonce: authorization.searchParams.get('nonce') ?? '', email: 'pat@example.com' })
  // Apple's page posts the answer cross-site: no cookie comes with it, so Plinth sends the browser on by GET.
  const posted = await app.inject({
    method: 'POST',
    url: `${auth}/apple/callback`,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ code: 'apple-code', state: authorization.searchParams.get('state') ?? '', user: '{"name":{"firstName":"Pat"}}' }).toString()
  })
  t.equal(posted.statusCode, 303)
  const landed = await app.inject({ url: posted.headers.location as string, headers: { cookie } })
  const ticket = ticketOf(landed.headers.location as string)
  t.ok(ticket.get('ticket'), `a ticket: ${String(landed.headers.location)}`)
  const session = await call(app, 'POST', `${auth}/exchange`, {}, { ticket: ticket.get('ticket'), codeVerifier: VERIFIER })
  t.match(session.body.data.user, { email: 'pat@example.com', emailVerified: true }, 'Apple\'s email_verified "true" counts')

  // Another key under the same ids: Apple refuses the signed secret.
  const otherKey = await generateKeyPair('ES256', { extractable: true })
  await call(app, 'PUT', `${providers}/apple`, admin.auth, { preset: 'apple', issuer: apple, clientId: APPLE.id, clientSecret: await exportPKCS8(otherKey.privateKey), apple: { teamId: APPLE.teamId, keyId: APPLE.keyId } })
  const retry = await start('apple')
  appleCodes.set('apple-code-2', { challenge: retry.authorization.searchParams.get('code_challenge') ?? '', nonce: retry.authorization.searchParams.get('nonce') ?? '', email: 'pat@example.com' })
  const refused = await app.inject({ url: `${auth}/apple/callback?code=apple-code-2&state=${retry.authorization.searchParams.get('state') ?? ''}`, headers: { cookie: retry.cookie } })
  t.equal(ticketOf(refused.headers.location as string).get('error'), 'APP_SSO_CODE_REJECTED', 'a secret signed with another key is refused')
})
