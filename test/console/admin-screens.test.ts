import t, { type Test } from 'tap'
import { execFile } from 'node:child_process'
import { existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import type { AddressInfo } from 'node:net'
import { chromium } from 'playwright-core'
import { AxeBuilder } from '@axe-core/playwright'
import { buildTestApp, tempDir } from '../helper.js'
import { defaultConsoleDir } from '../../plugins/console.js'

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'
const PASSWORD = 'correct horse battery'

// The console is built by `npm ci` (prepare); a tree that skipped it is built here the same way.
if (!existsSync(join(defaultConsoleDir(), 'index.html'))) await promisify(execFile)('npm', ['run', 'build:console'])

// The screens beyond the first increment (console.test.ts), each driven as a user would on one signed-in page.
t.test('the console\'s organization and project settings screens in headless Chromium', async (t) => {
  const app = await buildTestApp(t)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const origin = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
  const screens = join(tempDir(t, 'plinth-console-admin-'), 'screens')

  // Set up through the API what earlier screens already cover: a user, an organization, a project.
  await app.inject({ method: 'POST', url: '/api/auth/register', payload: { email: 'ada@example.com', password: PASSWORD, name: 'Ada' } })
  const login = await app.inject({ method: 'POST', url: '/api/auth/login', payload: { email: 'ada@example.com', password: PASSWORD } })
  const headers = { authorization: `Bearer ${login.json().data.accessToken as string}` }
  const api = async (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: object) => await app.inject({ method, url, headers, ...(payload === undefined ? {} : { payload }) })
  const orgId = (await api('POST', '/api/organizations', { name: 'Analytical Engines' })).json().data.id as string
  const projectId = (await api('POST', '/api/projects', { orgId, name: 'Notes' })).json().data.id as string

  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] })
  t.teardown(async () => { await browser.close() })
  const page = await (await browser.newContext()).newPage()
  const hosts = new Set<string>()
  await page.route('**/*', async (route) => {
    const { hostname } = new URL(route.request().url())
    hosts.add(hostname)
    if (hostname === '127.0.0.1') await route.continue()
    else await route.abort('blockedbyclient')
  })

  let shot = 0
  const screen = async (t: Test, name: string, heading: string | RegExp): Promise<void> => {
    await page.getByRole('heading', { level: 1, name: heading }).waitFor()
    await page.screenshot({ path: join(screens, `${String(++shot).padStart(2, '0')}-${name}.png`), fullPage: true })
    const { violations } = await new AxeBuilder({ page }).analyze()
    const grave = violations.filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
    t.same(grave.map((violation) => `${violation.id}: ${violation.help}`), [], `${name}: no serious or critical axe violation`)
  }

  await page.goto(`${origin}/console/`)
  await page.getByLabel('Email').fill('ada@example.com')
  await page.getByLabel('Password').fill(PASSWORD)
  await page.getByRole('button', { name: 'Sign in' }).press('Enter')
  await page.getByRole('heading', { level: 1, name: 'Organizations' }).waitFor()

  await t.test('API access: service tokens (shown once, verify, revoke) and CORS origins', async (t) => {
    await page.goto(`${origin}/console/projects/${projectId}`)
    await page.getByRole('link', { name: 'API access (service tokens, CORS)' }).click()
    await screen(t, 'access', 'Notes: API access')
    t.ok(await page.getByText('No service token yet.').isVisible())

    // A refusal is the API's own message: an expiry already past.
    await page.getByLabel('Service token name').fill('old')
    await page.getByLabel('Expires on (optional, UTC)').fill('2001-01-01')
    await page.getByRole('button', { name: 'Create service token' }).click()
    await t.resolves(page.getByRole('alert').filter({ hasText: 'APP_' }).waitFor(), 'a past expiry shows the API\'s message and code')
    t.same((await api('GET', `/api/projects/${projectId}/service-tokens`)).json().data, [], 'and nothing was made')

    await page.getByLabel('Expires on (optional, UTC)').fill('')
    await page.getByLabel('Service token name').fill('backend')
    await page.getByRole('button', { name: 'Create service token' }).press('Enter')
    const secret = await page.getByLabel('New service token').inputValue()
    await page.getByRole('rowheader', { name: 'backend' }).waitFor()
    await screen(t, 'access-token-created', 'Notes: API access')

    // The verify form asks the API with that token, as the project's servers would.
    await api('POST', `/api/projects/${projectId}/auth/toggle`, { enabled: true })
    const endUser = await app.inject({ method: 'POST', url: `/api/p/${projectId}/auth/register`, payload: { email: 'eve@example.com', password: PASSWORD } })
    await page.getByLabel('Service token', { exact: true }).fill(secret)
    await page.getByLabel('End-user token (project JWT)').fill(endUser.json().data.accessToken as string)
    await page.getByRole('button', { name: 'Verify token' }).click()
    await t.resolves(page.getByRole('status').filter({ hasText: 'Valid: end user eve@example.com' }).waitFor(), 'a live end-user token is valid')
    await page.getByLabel('End-user token (project JWT)').fill('not.a.token')
    await page.getByRole('button', { name: 'Verify token' }).click()
    await t.resolves(page.getByRole('status').filter({ hasText: 'Not valid' }).waitFor(), 'anything else is not')
    await screen(t, 'access-verified', 'Notes: API access')
    await page.getByRole('button', { name: 'Done, hide it' }).click()
    t.equal(await page.getByLabel('New service token').count(), 0, 'the secret is gone from the page')

    await page.getByRole('button', { name: 'Revoke backend' }).click()
    await page.getByRole('button', { name: 'Confirm revoking backend' }).click()
    await page.getByText('No service token yet.').waitFor()
    await page.getByRole('button', { name: 'Verify token' }).click()
    await t.resolves(page.getByRole('alert').filter({ hasText: /^Service token is invalid, revoked.*\(APP_/ }).waitFor(), 'a revoked service token is refused, in the API\'s words')
    const refused = await app.inject({ method: 'POST', url: `/api/p/${projectId}/auth/verify`, headers: { authorization: `Bearer ${secret}` }, payload: { token: 'x' } })
    t.equal(refused.statusCode, 401, 'revoked at the API too')

    await page.getByLabel(/^Allowed origins/).fill('https://app.example.com')
    await page.getByRole('button', { name: 'Save origins' }).click()
    await page.getByRole('status').filter({ hasText: 'Origins saved.' }).waitFor()
    t.same((await api('GET', `/api/projects/${projectId}`)).json().data.allowedOrigins, ['https://app.example.com'], 'the CORS origins saved')
    await page.getByLabel(/^Allowed origins/).fill('not an origin')
    await page.getByRole('button', { name: 'Save origins' }).click()
    await t.resolves(page.getByRole('alert').filter({ hasText: /"not an origin" is not an origin.*\(APP_/ }).waitFor(), 'an origin the API refuses: its message')
  })

  t.same([...hosts], ['127.0.0.1'], 'no request left loopback')
  t.same(readdirSync(screens).length, shot, 'a screenshot of each screen')
})
