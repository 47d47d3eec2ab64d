import t from 'tap'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { exportJWK, generateKeyPair, SignJWT } from 'jose'
import { buildTestApp, call, signUp } from '../../helper.js'

/**
 * A multi-tenant provider on loopback, as Microsoft's `common` endpoint is:
 * discovery names the issuer `<base>/{tenantid}/v2.0` and each tenant's
 * tokens carry their own `iss` and `tid`. (oidc-provider has one issuer, so
 * this one is written here: discovery, keys and a token endpoint answering
 * the ID token the test asks for.)
 */
const PUBLIC_URL = 'http://plinth.test'
const APP_ORIGIN = 'http://app.test'
// RFC 7636's example pair: the app's PKCE verifier for the ticket, and its S256 challenge.
const VERIFIER = 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk'
const CHALLENGE = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM'
const key = await generateKeyPair('RS256', { extractable: true })
const jwk = { ...await exportJWK(key.publicKey), kid: 'k1', alg: 'RS256', use: 'sig' }
let nextIdToken: Record<string, unknown> = {}

const server = createServer((request, response) => {
  const reply = (body: unknown) => { response.setHeader('content-type', 'application/json'); response.end(JSON.stringify(body)) }
  const path = request.url ?? ''
  if (path.endsWith('/.well-known/openid-configuration')) {
    reply({ issuer: `${base}/{tenantid}/v2.0`, authorization_endpoint: `${base}/authorize`, token_endpoint: `${base}/token`, jwks_uri: `${base}/keys` })
  } else if (path === '/keys') {
    reply({ keys: [jwk] })
  } else if (path === '/token') {
    request.resume()
    request.on('end', () => {
      void new SignJWT(nextIdToken).setProtectedHeader({ alg: 'RS256', kid: 'k1' }).setIssuedAt().setExpirationTime('5m').setAudience('multi').sign(key.privateKey)
        .then((idToken) => { reply({ id_token: idToken, token_type: 'Bearer' }) })
    })
  } else {
    response.statusCode = 404
    response.end()
  }
})
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
server.unref()
t.teardown(() => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()) }))
const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`

const app = await buildTestApp(t, { env: { PUBLIC_URL, AUTH_RATE_LIMIT_MAX: '1000', PROJECT_OAUTH_ALLOWED_HOSTS: '127.0.0.1' } })
const admin = await signUp(app, 'admin@example.com')
const orgId = (await call(app, 'POST', '/api/organizations', admin.auth, { name: 'Acme' })).body.data.id as string
const projectId = (await call(app, 'POST', '/api/projects', admin.auth, { orgId, name: 'Shop' })).body.data.id as string
await call(app, 'POST', `/api/projects/${projectId}/auth/toggle`, admin.auth, { enabled: true })
await call(app, 'PUT', `/api/projects/${projectId}`, admin.auth, { allowedOrigins: [APP_ORIGIN] })
const saved = await call(app, 'PUT', `/api/projects/${projectId}/auth/oauth-providers/work`, admin.auth, { issuer: `${base}/common/v2.0`, clientId: 'multi', clientSecret: 's' })
t.equal(saved.status, 200)
const auth = `/api/p/${projectId}/auth/oauth`

/** A sign-in whose provider answers with an ID token of these claims (and the sign-in's own nonce). */
async function signIn (claims: Record<string, unknown>) {
  const started = await app.inject({ url: `${auth}/work/start?redirectTo=${encodeURIComponent(`${APP_ORIGIN}/done`)}&codeChallenge=${CHALLENGE}` })
  if (started.statusCode !== 302) throw new Error(`start answered ${started.statusCode}: ${started.body}`)
  const location = new URL(started.headers.location as string)
  nextIdToken = { ...claims, nonce: location.searchParams.get('nonce') }
  const cookie = String(started.headers['set-cookie']).split(';')[0]
  const state = location.searchParams.get('state') ?? ''
  const landed = await app.inject({ url: `${auth}/work/callback?code=c&state=${encodeURIComponent(state)}`, headers: { cookie } })
  const landing = new URL(landed.headers.location as string)
  const error = landing.searchParams.get('error')
  if (error !== null) return { error }
  const session = await call(app, 'POST', `${auth}/exchange`, {}, { ticket: landing.searchParams.get('ticket'), codeVerifier: VERIFIER })
  return { user: session.body.data.user as { id: string, email: string } }
}

const tenant = (tid: string, sub: string, email: string) => ({ iss: `${base}/${tid}/v2.0`, tid, sub, email, email_verified: true })

t.test('the same subject at two tenants of one issuer setting is two people', async (t) => {
  const ann = await signIn(tenant('tenant-a', 'same-sub', 'ann@a.example'))
  t.equal(ann.user?.email, 'ann@a.example')
  const bob = await signIn(tenant('tenant-b', 'same-sub', 'bob@b.example'))
  t.equal(bob.user?.email, 'bob@b.example', 'tenant B\'s user is not signed in as tenant A\'s')
  t.not(bob.user?.id, ann.user?.id)
  const again = await signIn(tenant('tenant-a', 'same-sub', 'ann@a.example'))
  t.equal(again.user?.id, ann.user?.id, 'and each finds their own user again')
})

t.test('an ID token whose iss is not the discovered issuer is refused', async (t) => {
  const other = await signIn({ ...tenant('tenant-a', 'x', 'x@a.example'), iss: `${base}/tenant-b/v2.0` })
  t.same(other, { error: 'APP_SSO_INVALID_ID_TOKEN' }, 'another tenant\'s issuer than its tid')
  const elsewhere = await signIn({ ...tenant('tenant-a', 'x', 'x@a.example'), iss: 'http://elsewhere.test/tenant-a/v2.0' })
  t.same(elsewhere, { error: 'APP_SSO_INVALID_ID_TOKEN' }, 'another issuer altogether')
})
