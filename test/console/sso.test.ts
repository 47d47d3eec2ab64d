import t from 'tap'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { createServer as createTcpServer, type AddressInfo } from 'node:net'
import { join } from 'node:path'
import { exportJWK, generateKeyPair } from 'jose'
// @ts-expect-error oidc-provider publishes no type declarations; the one member used is typed below.
import OidcProviderModule from 'oidc-provider'
import { chromium } from 'playwright-core'
import { buildTestApp, tempDir } from '../helper.js'
import { CHROMIUM, ensureConsoleBuilt, keepOnLoopback, screenRecorder } from './browser.js'

type Handler = (request: IncomingMessage, response: ServerResponse) => void
const OidcProviderClass = OidcProviderModule as new (issuer: string, configuration: Record<string, unknown>) => { callback (): Handler }
const GOOGLE = { id: 'plinth-google', secret: 'google secret' }

await ensureConsoleBuilt()

async function listen (handler: Handler): Promise<string> {
  const server = createServer(handler)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  server.unref()
  t.teardown(() => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()) }))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

/** A port free now: PUBLIC_URL (and so the provider's registered callback) must name the port the server will listen on. */
async function freePort (): Promise<number> {
  const probe = createTcpServer()
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve))
  const { port } = probe.address() as AddressInfo
  await new Promise<void>((resolve) => probe.close(() => resolve()))
  return port
}

// The SSO route tests' real OpenID provider (oidc-provider, its development login and consent pages) plays Google on loopback.
t.test('the console signs in with a configured SSO provider, and shows a sign-in that did not complete', async (t) => {
  const port = await freePort()
  const origin = `http://127.0.0.1:${port}`
  let providerHandler: Handler = () => {}
  const opUrl = await listen((request, response) => providerHandler(request, response))
  const opKey = await generateKeyPair('RS256', { extractable: true })
  providerHandler = new OidcProviderClass(opUrl, {
    clients: [{ client_id: GOOGLE.id, client_secret: GOOGLE.secret, redirect_uris: [`${origin}/api/auth/oauth/google/callback`], token_endpoint_auth_method: 'client_secret_basic' }],
    jwks: { keys: [{ ...await exportJWK(opKey.privateKey), kid: 'op-1', alg: 'RS256', use: 'sig' }] },
    pkce: { required: () => true },
    conformIdTokenClaims: false,
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
    cookies: { keys: ['test-only-cookie-key'] },
    findAccount: (_ctx: unknown, id: string) => ({ accountId: id, claims: () => ({ sub: id, email: `${id}@example.com`, email_verified: true, name: `User ${id}` }) })
  }).callback()

  // No SSO_REDIRECT_URL nor SSO_ALLOWED_REDIRECTS: the console lands on the server's own origin, which is always allowed.
  const app = await buildTestApp(t, {
    env: { PUBLIC_URL: origin, SSO_ALLOWED_HOSTS: '127.0.0.1', GOOGLE_CLIENT_ID: GOOGLE.id, GOOGLE_CLIENT_SECRET: GOOGLE.secret, GOOGLE_ISSUER: opUrl }
  })
  await app.listen({ port, host: '127.0.0.1' })
  const screens = join(tempDir(t, 'plinth-console-sso-'), 'screens')
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] })
  t.teardown(async () => { await browser.close() })
  const page = await (await browser.newContext()).newPage()
  const hosts = await keepOnLoopback(page)
  const recorder = screenRecorder(page, screens)

  await page.goto(`${origin}/console/`)
  await recorder.screen(t, 'sign-in-sso', 'Sign in')
  t.same(await page.getByRole('region', { name: 'Single sign-on' }).getByRole('link').allTextContents(), ['Sign in with Google'], 'the providers the API lists')

  await t.test('a sign-in cancelled at the provider lands back with its error shown', async (t) => {
    await page.getByRole('link', { name: 'Sign in with Google' }).click()
    await page.getByRole('link', { name: '[ Cancel ]' }).click()
    await page.getByRole('heading', { level: 1, name: 'Sign in' }).waitFor()
    await t.resolves(page.getByRole('alert').filter({ hasText: /Single sign-on did not complete \(APP_SSO_\w+\)/ }).waitFor(), 'the landing\'s error code shown')
    t.equal(await page.evaluate('sessionStorage.length'), 0, 'no session kept')
  })

  await t.test('a sign-in at the provider lands back with a ticket the console trades for a session', async (t) => {
    await page.getByRole('link', { name: 'Sign in with Google' }).click()
    await page.locator('input[name="login"]').fill('grace')
    await page.locator('input[name="password"]').fill('anything')
    await page.getByRole('button', { name: 'Sign-in' }).click()
    await page.getByRole('button', { name: 'Continue' }).click()
    await page.getByRole('heading', { level: 1, name: 'Organizations' }).waitFor()
    t.ok(await page.getByText('grace@example.com').isVisible(), 'signed in as the provider\'s user')
    t.notOk(new URL(page.url()).searchParams.has('ticket'), 'the one-time ticket is gone from the address')
    const user = await app.identity.users.records.findOne({ email: 'grace@example.com' })
    t.ok(user, 'the platform user made from the provider\'s claims')
    await recorder.screen(t, 'sso-signed-in', 'Organizations')
  })

  // oidc-provider's development pages (the provider's, not the console's) ask for a web font: refused like any other host.
  t.same([...hosts].filter((host) => host !== 'fonts.googleapis.com'), ['127.0.0.1'], 'no request left loopback')
})
