import t from 'tap'
import { execFileSync } from 'node:child_process'
import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { AddressInfo } from 'node:net'
import { chromium } from 'playwright-core'
import { buildTestApp, tempDir } from '../helper.js'
import { CHROMIUM, ensureConsoleBuilt, keepOnLoopback, screenRecorder } from './browser.js'
import { FIXTURES } from '../routes/hosting/fixtures.js'

const PASSWORD = 'correct horse battery'

await ensureConsoleBuilt()

// Deploy by upload: a folder picked in the browser (packed there as a tar) or an archive, sent in chunks through the SDK.
t.test('the console deploys a folder and an archive by upload and shows each build log live', async (t) => {
  const app = await buildTestApp(t, { env: { GATEWAY_PORT: '0' } })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const origin = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
  const screens = join(tempDir(t, 'plinth-console-deploy-'), 'screens')

  await app.inject({ method: 'POST', url: '/api/auth/register', payload: { email: 'ada@example.com', password: PASSWORD, name: 'Ada' } })
  const login = await app.inject({ method: 'POST', url: '/api/auth/login', payload: { email: 'ada@example.com', password: PASSWORD } })
  const headers = { authorization: `Bearer ${login.json().data.accessToken as string}` }
  const api = async (method: 'GET' | 'POST', url: string, payload?: object) => await app.inject({ method, url, headers, ...(payload === undefined ? {} : { payload }) })
  const orgId = (await api('POST', '/api/organizations', { name: 'Analytical Engines' })).json().data.id as string
  const projectId = (await api('POST', '/api/projects', { orgId, name: 'Notes' })).json().data.id as string
  const appId = (await api('POST', `/api/projects/${projectId}/backend/apps`, { name: 'site' })).json().data.id as string
  const appUrl = `/api/projects/${projectId}/backend/apps/${appId}`

  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] })
  t.teardown(async () => { await browser.close() })
  const page = await (await browser.newContext()).newPage()
  const hosts = await keepOnLoopback(page)
  const recorder = screenRecorder(page, screens)

  await page.goto(`${origin}/console/`)
  await page.getByLabel('Email').fill('ada@example.com')
  await page.getByLabel('Password').fill(PASSWORD)
  await page.getByRole('button', { name: 'Sign in' }).press('Enter')
  await page.getByRole('heading', { level: 1, name: 'Organizations' }).waitFor()
  await page.goto(`${origin}/console/projects/${projectId}/hosting/${appId}`)
  await recorder.screen(t, 'deploy-empty', 'App site')
  t.ok(await page.getByRole('button', { name: 'Deploy' }).isDisabled(), 'nothing to deploy until a source is picked')

  await t.test('a folder: packed in the browser, uploaded with progress, its build followed live until it is live', async (t) => {
    await page.getByLabel('Or a source folder').setInputFiles(join(FIXTURES, 'node-hello'))
    await page.getByText('Folder node-hello, 4 file(s), packed as a tar.').waitFor()
    await page.getByRole('button', { name: 'Deploy' }).press('Enter')
    const live = page.getByRole('region', { name: /^Live build log of / })
    await live.waitFor()
    const deploymentId = ((await live.getByRole('heading').innerText()).split(' ').at(-1)) ?? ''
    t.match(await page.getByText(/^Uploaded \d+ of \d+ bytes/).innerText(), /^Uploaded (\d+) of \1 bytes/, 'the upload\'s progress, complete')
    await t.resolves(live.getByText('build finished').waitFor({ timeout: 120_000 }), 'the build\'s own output streams in')
    await live.getByRole('status').filter({ hasText: `Deployment ${deploymentId}: live` }).waitFor({ timeout: 120_000 })
    const deployment = (await api('GET', `${appUrl}/deployments/${deploymentId}`)).json().data
    t.match(deployment, { state: 'live', trigger: 'api' }, 'the API has the deployment live')
    await page.getByRole('row').filter({ has: page.getByRole('rowheader', { name: deploymentId }) }).filter({ hasText: 'live' }).waitFor()
    await recorder.screen(t, 'deploy-folder-live', 'App site')
  })

  await t.test('an archive: a wrong kind refused in the API\'s words, then one that cannot build shows its failure', async (t) => {
    await page.getByLabel('Source archive (.tar.gz, .tgz or .tar)').setInputFiles({ name: 'source.zip', mimeType: 'application/zip', buffer: Buffer.from('PK not a tar') })
    await page.getByRole('button', { name: 'Deploy' }).click()
    await t.resolves(page.getByRole('alert').filter({ hasText: 'APP_HOSTING_ARCHIVE_INVALID' }).waitFor(), 'the API\'s refusal of a .zip')

    const empty = tempDir(t, 'plinth-console-empty-')
    writeFileSync(join(empty, 'README.md'), 'nothing to run\n')
    const file = join(tempDir(t, 'plinth-console-archive-'), 'empty.tar.gz')
    execFileSync('tar', ['-czf', file, '-C', empty, '.'])
    await page.getByLabel('Source archive (.tar.gz, .tgz or .tar)').setInputFiles({ name: 'empty.tar.gz', mimeType: 'application/gzip', buffer: readFileSync(file) })
    await page.getByText('Archive empty.tar.gz').waitFor()
    const before = (await api('GET', `${appUrl}/deployments`)).json().data.length as number
    await page.getByRole('button', { name: 'Deploy' }).click()
    const live = page.getByRole('region', { name: /^Live build log of / })
    await live.getByRole('status').filter({ hasText: ': build_failed' }).waitFor({ timeout: 120_000 })
    t.equal((await api('GET', `${appUrl}/deployments`)).json().data.length, before + 1, 'one deployment queued')
    // The log comes on its own stream, beside the state's: it may arrive just after the state says the build failed.
    await t.resolves(live.locator('pre').filter({ hasText: /\S/ }).waitFor(), 'its build log says why')
    await recorder.screen(t, 'deploy-archive-failed', 'App site')
  })

  t.same([...hosts], ['127.0.0.1'], 'no request left loopback')
  t.same(readdirSync(screens).length, recorder.count, 'a screenshot of each screen')
})
