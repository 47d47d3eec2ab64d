import t from 'tap'
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { gzipSync } from 'node:zlib'
import type { AddressInfo } from 'node:net'
import { chromium, type Page } from 'playwright-core'
import { buildTestApp, tempDir } from '../helper.js'
import { CHROMIUM, ensureConsoleBuilt, keepOnLoopback, screenRecorder, waitUntil } from './browser.js'
import Fastify from 'fastify'
import consolePlugin from '../../plugins/console.js'
import errorsPlugin from '../../plugins/errors.js'

await ensureConsoleBuilt()

t.test('the console in headless Chromium: sign-up, organization, project, collection, records', async (t) => {
  const app = await buildTestApp(t)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const origin = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
  const screens = join(tempDir(t, 'plinth-console-'), 'screens')

  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] })
  t.teardown(async () => { await browser.close() })
  const context = await browser.newContext()
  const page = await context.newPage()
  const hosts = await keepOnLoopback(page)
  const scripts: Buffer[] = []
  page.on('response', (response) => {
    if (response.request().resourceType() === 'script') void response.body().then((body) => { scripts.push(body) })
  })

  const recorder = screenRecorder(page, screens)
  const screen = async (name: string, heading: string | RegExp): Promise<void> => { await recorder.screen(t, name, heading) }

  await page.goto(`${origin}/console/`)
  await screen('sign-in', 'Sign in')
  const firstLoad = scripts.reduce((sum, body) => sum + gzipSync(body).length, 0)
  t.ok(firstLoad > 0 && firstLoad < 300 * 1024, `first load: ${(firstLoad / 1024).toFixed(1)} KB of JavaScript gzipped`)

  // A refusal shows the API's own message.
  await page.getByLabel('Email').fill('ada@example.com')
  await page.getByLabel('Password').fill('correct horse battery')
  await page.getByRole('button', { name: 'Sign in' }).press('Enter')
  await t.resolves(page.getByRole('alert').filter({ hasText: 'APP_' }).waitFor(), 'a failed sign-in shows the API\'s message and code')

  await page.getByRole('button', { name: 'Create an account' }).click()
  await screen('sign-up', 'Create your account')
  await page.getByLabel('Name').fill('Ada')
  await page.getByLabel('Email').fill('ada@example.com')
  await page.getByLabel('Password').fill('correct horse battery')
  await page.getByRole('button', { name: 'Create account' }).click()

  await screen('organizations', 'Organizations')
  await page.getByLabel('Organization name').fill('Analytical Engines')
  await page.getByRole('button', { name: 'Create organization' }).click()

  await screen('projects', 'Analytical Engines: projects')
  // Members: another platform user added by email, their role changed, then removed.
  await app.inject({ method: 'POST', url: '/api/auth/register', payload: { email: 'cy@example.com', password: 'correct horse battery', name: 'Cy' } })
  await page.getByRole('link', { name: 'Members of this organization' }).click()
  await screen('members', 'Analytical Engines: members')
  await page.getByLabel('Member email').fill('cy@example.com')
  await page.getByLabel('Member role').selectOption('viewer')
  await page.getByRole('button', { name: 'Add member' }).click()
  await page.getByLabel('Role of cy@example.com').selectOption('admin')
  const orgId = decodeURIComponent(new URL(page.url()).pathname.split('/')[3] ?? '')
  const membersNow = async () => (await app.inject({ method: 'GET', url: `/api/organizations/${orgId}/members`, headers: { authorization: `Bearer ${await tokenOf(page)}` } })).json().data as Array<{ email: string, role: string }>
  await page.waitForFunction('document.querySelector("tbody") && document.querySelectorAll("tbody tr").length === 2')
  await t.resolves(waitUntil(async () => (await membersNow()).some((member) => member.email === 'cy@example.com' && member.role === 'admin')), 'a member added, then made admin')
  await screen('members-changed', 'Analytical Engines: members')
  await page.getByRole('button', { name: 'Remove cy@example.com' }).click()
  await page.getByRole('button', { name: 'Confirm removing cy@example.com' }).click()
  await page.getByRole('rowheader', { name: 'cy@example.com' }).waitFor({ state: 'detached' })
  t.same((await membersNow()).map((member) => member.email), ['ada@example.com'], 'and removed')
  await page.getByRole('link', { name: 'Projects' }).click()
  await page.getByRole('heading', { level: 1, name: 'Analytical Engines: projects' }).waitFor()
  await page.getByLabel('Project name').fill('Notes')
  await page.getByRole('button', { name: 'Create project' }).click()

  await screen('collections', 'Notes: collections')
  await page.getByLabel('Collection name').fill('notes')
  await page.getByLabel('Field 1 name').fill('title')
  await page.getByLabel('Field 1 required').check()
  await page.getByRole('button', { name: 'Add field' }).click()
  await page.getByLabel('Field 2 name').fill('stars')
  await page.getByLabel('Field 2 type').selectOption('number')
  await page.getByRole('button', { name: 'Add field' }).click()
  await page.getByLabel('Field 3 name').fill('scan')
  await page.getByLabel('Field 3 type').selectOption('file')
  await page.getByRole('button', { name: 'Create collection' }).click()

  await screen('records', 'Records of notes')
  const rows = page.locator('tbody tr')
  for (const [title, stars] of [['First', '3'], ['Second', '5']]) {
    await page.getByLabel('title', { exact: true }).fill(title)
    await page.getByLabel('stars', { exact: true }).fill(stars)
    await page.getByRole('button', { name: 'Create record' }).click()
    await rows.filter({ hasText: title }).or(page.getByRole('alert')).first().waitFor()
    t.same(await page.getByRole('alert').allInnerTexts(), [], `${title} created`)
  }
  // A value the collection refuses: the API's message, nothing written.
  await page.getByLabel('title', { exact: true }).fill('Third')
  await page.getByLabel('stars', { exact: true }).fill('')
  await page.getByLabel('title', { exact: true }).fill('')
  await page.getByRole('button', { name: 'Create record' }).press('Enter')
  t.equal(await rows.count(), 2, 'two records, newest first')

  const first = rows.filter({ hasText: 'First' })
  const id = await first.locator('th code').innerText()
  await first.getByRole('button', { name: `Edit ${id}` }).click()
  await page.getByLabel(`title of ${id}`).fill('First, edited')
  await page.getByRole('button', { name: `Save ${id}` }).click()
  await rows.filter({ hasText: 'First, edited' }).waitFor()
  const stored = await app.inject({ method: 'GET', url: `/api/p/${await projectIdOf(page)}/notes/${id}`, headers: { authorization: `Bearer ${await tokenOf(page)}` } })
  t.match(stored.json(), { data: { title: 'First, edited', stars: 3, version: 2 } }, 'the inline edit reached the server, with If-Match')

  await page.getByLabel(`Upload scan for ${id}`).setInputFiles({ name: 'scan.txt', mimeType: 'text/plain', buffer: Buffer.from('a scanned page\n') })
  await rows.filter({ hasText: '1 file(s)' }).waitFor()
  t.pass('a file uploaded on the record')

  // The access token expires mid-use (here: the server already refuses it while the kept expiry says it is live, as
  // with a computer's clock that is off): the next call is refreshed through the SDK, not bounced to sign-in.
  const kept = JSON.parse(await page.evaluate<string>('sessionStorage.getItem("plinth.console.session")')) as { user: { id: string }, refreshToken: string }
  const expired = app.jwt.sign({ sub: kept.user.id, sid: 'any', type: 'platform', iat: Math.floor(Date.now() / 1000) - 3600 })
  t.equal((await app.inject({ method: 'GET', url: '/api/auth/me', headers: { authorization: `Bearer ${expired}` } })).statusCode, 401, 'the server refuses the expired token')
  await page.evaluate(`sessionStorage.setItem("plinth.console.session", JSON.stringify({ ...JSON.parse(sessionStorage.getItem("plinth.console.session")), accessToken: ${JSON.stringify(expired)} }))`)
  const refreshed = page.waitForResponse((response) => new URL(response.url()).pathname === '/api/auth/refresh')
  await page.getByRole('searchbox').or(page.getByLabel(/^Filter/)).fill('{"stars": {"$gte": 4}}')
  await page.getByRole('button', { name: 'Apply filter' }).click()
  t.equal((await refreshed).status(), 200, 'the session was refreshed through the SDK')
  await page.waitForFunction('document.querySelectorAll("tbody tr").length === 1')
  t.match(await rows.innerText(), /Second/, 'the filter kept the matching record, with the refreshed session')
  t.not(JSON.parse(await page.evaluate<string>('sessionStorage.getItem("plinth.console.session")')).refreshToken, kept.refreshToken, 'the rotated refresh token is kept')
  await screen('records-filtered', 'Records of notes')

  const second = rows.filter({ hasText: 'Second' })
  const secondId = await second.locator('th code').innerText()
  await second.getByRole('button', { name: `Delete ${secondId}` }).click()
  await second.getByRole('button', { name: `Confirm delete ${secondId}` }).click()
  await page.getByText('Records, page 1 (empty)').waitFor()
  t.pass('the record was deleted')

  // Rules: list opened to anyone under a filter; the API then answers an anonymous caller with what it lets through.
  const projectId = await projectIdOf(page)
  const anonymousList = async () => await app.inject({ method: 'GET', url: `/api/p/${projectId}/notes` })
  t.not((await anonymousList()).statusCode, 200, 'list is for platform admins only before')
  await page.getByRole('link', { name: 'Rules of notes' }).click()
  await screen('rules', 'Rules of notes')
  await page.getByLabel('list: who may call it').selectOption('anyone')
  await page.getByLabel('list filter (JSON)').fill('{"stars": ')
  await page.getByRole('button', { name: 'Save rules' }).click()
  await t.resolves(page.getByRole('alert').filter({ hasText: 'The filter of list is not JSON' }).waitFor(), 'a filter that is not JSON is named')
  await page.getByLabel('list filter (JSON)').fill('{"stars": {"$lte": 3}}')
  await page.getByRole('button', { name: 'Save rules' }).click()
  await page.getByRole('status').filter({ hasText: 'Rules saved.' }).waitFor()
  const listed = await anonymousList()
  t.equal(listed.statusCode, 200, 'anyone may list now')
  t.match(listed.json(), { data: { items: [{ title: 'First, edited', stars: 3 }] } }, 'under the rule\'s filter')
  t.equal(listed.json().data.items.length, 1)
  await screen('rules-saved', 'Rules of notes')

  // Who can see this? Nobody signed in, under the saved rule, then under a draft that is not saved.
  await page.getByLabel('Method to try').selectOption('list')
  await page.getByRole('button', { name: 'Try it' }).click()
  await t.resolves(page.getByRole('status').filter({ hasText: 'Nobody signed in may call list.' }).waitFor(), 'the tester says who may call it')
  await t.resolves(page.getByText('They can see 1 records.').waitFor(), 'as many records as the data API lets through')
  await page.getByLabel('list: who may call it').selectOption('users')
  await page.getByRole('button', { name: 'Try it' }).click()
  await t.resolves(page.getByRole('status').filter({ hasText: 'Nobody signed in may not call list' }).waitFor(), 'a draft rule is tried before it is saved')
  await screen('rules-tester', 'Rules of notes')
  t.equal((await anonymousList()).statusCode, 200, 'the draft was not saved')

  // Personal access tokens: the secret shown once works as a credential until revoked.
  await page.getByRole('link', { name: 'Tokens' }).click()
  await screen('tokens', 'Personal access tokens')
  await page.getByLabel('Token name').fill('ci')
  await page.getByRole('button', { name: 'Create token' }).click()
  const secret = await page.getByLabel('New token').inputValue()
  const me = async () => (await app.inject({ method: 'GET', url: '/api/auth/me', headers: { authorization: `Bearer ${secret}` } })).statusCode
  t.equal(await me(), 200, 'the new token is a working credential')
  await screen('tokens-created', 'Personal access tokens')
  await page.getByRole('button', { name: 'Done, hide it' }).click()
  t.equal(await page.getByLabel('New token').count(), 0, 'the secret is gone from the page')
  await page.getByRole('button', { name: 'Revoke ci' }).click()
  await page.getByText('No token yet.').waitFor()
  t.equal(await me(), 401, 'a revoked token is refused')

  // Git: a repository created with a README, its tree, the file, its commits.
  await page.goto(`${origin}/console/projects/${encodeURIComponent(projectId)}`)
  await page.getByRole('link', { name: 'Git repositories' }).click()
  await screen('repositories', 'Git repositories')
  await page.getByLabel('Repository name').fill('site')
  await page.getByRole('button', { name: 'Create repository' }).click()
  await screen('repository', 'Repository site')
  await page.getByRole('button', { name: 'README.md' }).click()
  await t.resolves(page.getByRole('region', { name: 'File README.md' }).locator('pre').filter({ hasText: 'site' }).waitFor(), 'the README\'s content shown')
  await page.getByRole('heading', { name: 'Latest commits on main' }).waitFor()
  t.equal(await page.locator('main ol.list li').count(), 1, 'one commit listed')
  await screen('repository-file', 'Repository site')

  // DNS: a zone and a record in it, added and deleted.
  await page.goto(`${origin}/console/projects/${encodeURIComponent(projectId)}/dns`)
  await screen('dns-zones', 'DNS zones')
  await page.getByLabel(/^Zone name/).fill('engines.test')
  await page.getByRole('button', { name: 'Create zone' }).click()
  await screen('dns-zone', 'Zone engines.test')
  await page.getByLabel(/^Record name/).fill('www')
  await page.getByLabel(/^Record content/).fill('192.0.2.7')
  await page.getByRole('button', { name: 'Add record' }).click()
  const aRecord = page.getByRole('button', { name: 'Delete A www.engines.test 192.0.2.7' })
  await aRecord.waitFor()
  await screen('dns-record', 'Zone engines.test')
  await aRecord.click()
  await aRecord.waitFor({ state: 'detached' })
  t.pass('a record added and deleted')

  t.same([...hosts], ['127.0.0.1'], 'no request left loopback')
  t.same(readdirSync(screens).length, recorder.count, 'a screenshot of each screen')
})

async function tokenOf (page: Page): Promise<string> {
  return await page.evaluate<string>('JSON.parse(sessionStorage.getItem("plinth.console.session")).accessToken')
}

async function projectIdOf (page: Page): Promise<string> {
  return decodeURIComponent(new URL(page.url()).pathname.split('/')[3] ?? '')
}

t.test('/console serves the app shell for its own paths, a 404 for a missing asset', async (t) => {
  const app = await buildTestApp(t)
  const shell = await app.inject({ method: 'GET', url: '/console/projects/p1/collections/notes' })
  t.equal(shell.statusCode, 200)
  t.match(shell.headers['content-type'], /text\/html/)
  t.match(shell.body, /<div id="app">/, 'a deep link answers index.html, so the app routes it')
  t.equal((await app.inject({ method: 'GET', url: '/console' })).statusCode, 200)
  const missing = await app.inject({ method: 'GET', url: '/console/assets/nothing.js' })
  t.equal(missing.statusCode, 404)
  t.match(missing.json(), { success: false, code: 'APP_ROUTE_NOT_FOUND' }, 'a missing asset is the API\'s 404, not the shell')
})

t.test('/console without a build answers 503 APP_CONSOLE_NOT_BUILT', async (t) => {
  const app = Fastify()
  await app.register(errorsPlugin)
  await app.register(consolePlugin, { dir: join(tempDir(t), 'no-build') })
  t.teardown(async () => { await app.close() })
  for (const url of ['/console', '/console/organizations']) {
    const answer = await app.inject({ method: 'GET', url })
    t.equal(answer.statusCode, 503, url)
    t.match(answer.json(), { success: false, code: 'APP_CONSOLE_NOT_BUILT', message: /npm run build/ })
  }
})
