import t from 'tap'
import { execFileSync } from 'node:child_process'
import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { AddressInfo } from 'node:net'
import { chromium } from 'playwright-core'
import { buildTestApp, tempDir } from '../helper.js'
import { CHROMIUM, ensureConsoleBuilt, keepOnLoopback, screenRecorder, waitUntil } from './browser.js'
import { deploymentSettled, packFixture, uploadSource } from '../routes/hosting/fixtures.js'

const PASSWORD = 'correct horse battery'

await ensureConsoleBuilt()

// The screens beyond the first increment (console.test.ts), each driven as a user would on one signed-in page.
t.test('the console\'s organization and project settings screens in headless Chromium', async (t) => {
  // The project's OpenID provider and SMTP relay named below are on loopback, which the operator must allow.
  const app = await buildTestApp(t, { env: { GATEWAY_PORT: '0', PROJECT_OAUTH_ALLOWED_HOSTS: '127.0.0.1', PROJECT_SMTP_ALLOWED_HOSTS: '127.0.0.1' } })
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
  const hosts = await keepOnLoopback(page)

  const recorder = screenRecorder(page, screens)
  const screen = recorder.screen

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

  await t.test('teams and permission groups: created, members and grants added and removed, deleted', async (t) => {
    await app.inject({ method: 'POST', url: '/api/auth/register', payload: { email: 'cy@example.com', password: PASSWORD, name: 'Cy' } })
    const cy = (await api('POST', `/api/organizations/${orgId}/members`, { email: 'cy@example.com', role: 'viewer' })).json().data.id as string
    const teams = async () => (await api('GET', `/api/organizations/${orgId}/teams`)).json().data as Array<{ name: string, members: string[], permissions: Array<{ permission: string, projectId?: string | null }> }>

    await page.goto(`${origin}/console/organizations/${orgId}`)
    await page.getByRole('link', { name: 'Teams' }).click()
    await screen(t, 'teams', 'Analytical Engines: teams')
    await page.getByLabel('Name of the new team').fill('Writers')
    await page.getByLabel('Description (optional)').fill('They write the notes')
    await page.getByRole('button', { name: 'Create team' }).click()
    await page.getByRole('heading', { level: 2, name: 'Writers' }).waitFor()
    // The same name again: the API's refusal, in its words.
    await page.getByLabel('Name of the new team').fill('Writers')
    await page.getByRole('button', { name: 'Create team' }).press('Enter')
    await t.resolves(page.getByRole('alert').filter({ hasText: 'A team named "Writers" already exists (APP_TEAM_NAME_TAKEN)' }).waitFor(), 'a taken name is refused')

    await page.getByLabel('Member to add to Writers').selectOption({ label: 'cy@example.com' })
    await page.getByRole('button', { name: 'Add to Writers' }).click()
    await page.getByRole('button', { name: 'Remove cy@example.com from Writers' }).waitFor()
    await page.getByLabel('Permission to grant Writers').selectOption('records.write')
    await page.getByLabel('Where Writers holds it').selectOption({ label: 'Project Notes' })
    await page.getByRole('button', { name: 'Grant to Writers' }).click()
    await page.getByRole('button', { name: 'Remove grant records.write on Notes from Writers' }).waitFor()
    t.match(await teams(), [{ name: 'Writers', members: [cy], permissions: [{ permission: 'records.write', projectId }] }], 'the member and the project grant reached the API')
    const effective = await api('GET', `/api/organizations/${orgId}/members/${cy}/effective-permissions?projectId=${projectId}`)
    t.ok((effective.json().data.permissions as string[]).includes('records.write'), 'and the member holds it through the team')
    await screen(t, 'team-filled', 'Analytical Engines: teams')

    await page.getByRole('button', { name: 'Remove grant records.write on Notes from Writers' }).click()
    await page.getByRole('button', { name: 'Remove cy@example.com from Writers' }).click()
    await page.getByLabel('Member to add to Writers').waitFor()
    await t.resolves(waitUntil(async () => (await teams()).some((team) => team.members.length === 0 && team.permissions.length === 0)), 'grant and member taken out')
    await page.getByRole('button', { name: 'Delete team Writers' }).click()
    await page.getByRole('button', { name: 'Confirm deleting Writers' }).click()
    await page.getByText('No team yet.').waitFor()
    t.same(await teams(), [], 'the team deleted')

    // Permission groups: the same screen over their own routes.
    await page.getByRole('link', { name: 'Permission groups of this organization' }).click()
    await screen(t, 'permission-groups', 'Analytical Engines: permission groups')
    await page.getByLabel('Name of the new permission group').fill('Auditors')
    await page.getByRole('button', { name: 'Create permission group' }).click()
    await page.getByLabel('Permission to grant Auditors').selectOption('audit.read')
    await page.getByRole('button', { name: 'Grant to Auditors' }).click()
    await page.getByRole('button', { name: 'Remove grant audit.read (whole organization) from Auditors' }).waitFor()
    const groups = (await api('GET', `/api/organizations/${orgId}/permission-groups`)).json().data
    t.match(groups, [{ name: 'Auditors', permissions: [{ permission: 'audit.read' }] }], 'the group and its organization-wide grant reached the API')
    await screen(t, 'permission-group-filled', 'Analytical Engines: permission groups')
  })

  await t.test('end-user auth: switched off and on, an OpenID provider saved, edited and removed, email settings', async (t) => {
    const project = async () => (await api('GET', `/api/projects/${projectId}`)).json().data as { authEnabled: boolean }
    const providers = async () => (await api('GET', `/api/projects/${projectId}/auth/oauth-providers`)).json().data as Array<{ id: string, enabled: boolean, hasClientSecret: boolean, endpoints?: object }>
    await page.goto(`${origin}/console/projects/${projectId}`)
    await page.getByRole('link', { name: 'End-user auth' }).click()
    await screen(t, 'end-user-auth', 'Notes: end-user auth')
    await page.getByRole('button', { name: 'Turn end-user auth off' }).click()
    await page.getByRole('status').filter({ hasText: 'End-user auth is off' }).waitFor()
    t.equal((await project()).authEnabled, false, 'switched off at the API')
    await page.getByRole('button', { name: 'Turn end-user auth on' }).click()
    await page.getByRole('status').filter({ hasText: 'End-user auth is on' }).waitFor()
    t.equal((await project()).authEnabled, true, 'and on again')

    await page.getByLabel(/^Provider id/).fill('corp')
    await page.getByLabel('Button label (optional)').fill('Corp SSO')
    await page.getByLabel('Issuer URL').fill('http://10.1.2.3/idp')
    await page.getByLabel('Client id').fill('plinth')
    await page.getByLabel(/^Client secret/).fill('s3cret')
    await page.getByRole('button', { name: 'Save provider' }).click()
    await t.resolves(page.getByRole('alert').filter({ hasText: 'APP_OAUTH_HOST_REFUSED' }).waitFor(), 'an internal issuer the operator did not allow: the API\'s refusal')
    await page.getByLabel('Issuer URL').fill('http://127.0.0.1:9/idp')
    await page.getByLabel('Authorization endpoint').fill('http://127.0.0.1:9/idp/authorize')
    await page.getByLabel('Token endpoint').fill('http://127.0.0.1:9/idp/token')
    await page.getByLabel('JWKS endpoint').fill('http://127.0.0.1:9/idp/jwks')
    await page.getByRole('button', { name: 'Save provider' }).click()
    await page.getByRole('rowheader', { name: 'corp' }).waitFor()
    t.match(await providers(), [{ id: 'corp', enabled: true, hasClientSecret: true, endpoints: { token: 'http://127.0.0.1:9/idp/token' } }], 'the provider saved with its endpoints')
    await screen(t, 'end-user-auth-provider', 'Notes: end-user auth')

    await page.getByRole('button', { name: 'Edit corp' }).click()
    t.equal(await page.getByLabel('Client id').inputValue(), 'plinth', 'Edit fills the form')
    await page.getByLabel('Provider enabled').uncheck()
    await page.getByRole('button', { name: 'Save provider' }).click()
    await page.getByRole('status').filter({ hasText: 'Provider corp saved.' }).waitFor()
    t.match(await providers(), [{ id: 'corp', enabled: false, hasClientSecret: true }], 'switched off, the stored secret kept')
    await page.getByRole('button', { name: 'Remove corp' }).click()
    await page.getByRole('button', { name: 'Confirm removing corp' }).click()
    await page.getByText('No sign-in provider yet.').waitFor()
    t.same(await providers(), [], 'and removed')

    await page.getByLabel('SMTP host').fill('10.9.9.9')
    await page.getByLabel('SMTP port').fill('2525')
    await page.getByLabel('SMTP security').selectOption('none')
    await page.getByLabel(/^Sender/).fill('Notes <no-reply@notes.test>')
    await page.getByLabel(/^Link base URL/).fill('https://app.example.com/auth')
    await page.getByRole('button', { name: 'Save email settings' }).click()
    await t.resolves(page.getByRole('alert').filter({ hasText: 'APP_SMTP_HOST_REFUSED' }).waitFor(), 'an internal SMTP host the operator did not allow: the API\'s refusal')
    await page.getByLabel('SMTP host').fill('127.0.0.1')
    await page.getByLabel('Require a verified email to sign in').check()
    await page.getByRole('button', { name: 'Save email settings' }).click()
    await page.getByRole('status').filter({ hasText: 'Email settings saved.' }).waitFor()
    const email = await api('GET', `/api/projects/${projectId}/auth/email`)
    t.match(email.json().data, { smtp: { host: '127.0.0.1', port: 2525, security: 'none', hasPassword: false }, sender: 'Notes <no-reply@notes.test>', requireVerifiedEmail: true }, 'the email settings saved')
    await screen(t, 'end-user-auth-email', 'Notes: end-user auth')
    await page.getByRole('button', { name: 'Remove the email settings' }).click()
    await page.getByRole('button', { name: 'Confirm removing the email settings' }).click()
    await page.getByText('No email settings yet').waitFor()
    t.equal((await api('GET', `/api/projects/${projectId}/auth/email`)).json().code, 'APP_PROJECT_EMAIL_NOT_CONFIGURED', 'and removed')
  })

  await t.test('end users: listed a page at a time, filtered by address, disabled, deleted after a confirmation, refusals shown', async (t) => {
    // Straight through the service: more users than a page holds, without sign-up's rate limit per address.
    for (let i = 0; i < 21; i++) await app.projectAuth.users.createFromProvider(projectId, `user${String(i).padStart(2, '0')}@crowd.test`, true)
    const users = async (email: string) => (await api('GET', `/api/projects/${projectId}/users?email=${encodeURIComponent(email)}`)).json().data.items as Array<{ id: string, disabled: boolean }>
    await page.goto(`${origin}/console/projects/${projectId}/auth`)
    await page.getByRole('heading', { level: 1, name: 'Notes: end-user auth' }).waitFor()
    const caption = page.locator('caption').filter({ hasText: 'End users, page' })
    await caption.filter({ hasText: 'page 1' }).waitFor()
    t.ok(await page.getByRole('rowheader', { name: 'user20@crowd.test' }).isVisible(), 'newest first')
    t.equal(await page.getByRole('rowheader', { name: 'eve@example.com' }).count(), 0, 'the oldest is on a later page')
    await page.getByRole('button', { name: 'Next end users' }).press('Enter')
    await caption.filter({ hasText: 'page 2' }).waitFor()
    await page.getByRole('rowheader', { name: 'eve@example.com' }).waitFor()
    await screen(t, 'end-users-page-2', 'Notes: end-user auth')
    await page.getByRole('button', { name: 'Previous end users' }).press('Enter')
    await caption.filter({ hasText: 'page 1' }).waitFor()

    await page.getByLabel('Address contains').fill('USER07@')
    await page.getByLabel('Address contains').press('Enter')
    await page.getByRole('rowheader', { name: 'user08@crowd.test' }).waitFor({ state: 'detached' })
    t.same(await page.getByRole('rowheader').allTextContents(), ['user07@crowd.test'], 'the filter keeps one')
    await page.getByRole('button', { name: 'Disable user07@crowd.test' }).press('Enter')
    await page.getByRole('button', { name: 'Enable user07@crowd.test' }).waitFor()
    t.equal((await users('user07@'))[0].disabled, true, 'disabled at the API')
    await screen(t, 'end-users-filtered', 'Notes: end-user auth')

    await page.getByRole('button', { name: 'Delete user07@crowd.test' }).press('Enter')
    await page.getByRole('button', { name: 'Confirm deleting user07@crowd.test' }).press('Enter')
    await caption.filter({ hasText: '(none)' }).waitFor()
    t.same(await users('user07@'), [], 'deleted at the API')

    // Deleted behind the console's back: the next action shows the API's refusal.
    await page.getByLabel('Address contains').fill('user08@')
    await page.getByRole('button', { name: 'Filter end users' }).click()
    await page.getByRole('rowheader', { name: 'user08@crowd.test' }).waitFor()
    await api('DELETE', `/api/projects/${projectId}/users/${(await users('user08@'))[0].id}`)
    await page.getByRole('button', { name: 'Disable user08@crowd.test' }).click()
    await t.resolves(page.getByRole('alert').filter({ hasText: 'No end user with this id' }).waitFor(), 'the API\'s message is shown')
  })

  await t.test('hosting: an app created, its deployments with their state and logs, a rollback, its secrets', async (t) => {
    await page.goto(`${origin}/console/projects/${projectId}`)
    await page.getByRole('link', { name: 'Hosting apps' }).click()
    await screen(t, 'hosting-apps', 'Notes: hosting apps')
    await page.getByLabel(/^App name/).fill('Not A Name')
    await page.getByRole('button', { name: 'Create app' }).click()
    await t.resolves(page.getByRole('alert').filter({ hasText: 'APP_' }).waitFor(), 'a name the API refuses: its message')
    await page.getByLabel(/^App name/).fill('site')
    await page.getByRole('button', { name: 'Create app' }).press('Enter')
    await page.getByRole('heading', { level: 1, name: 'App site' }).waitFor()
    const appId = decodeURIComponent(new URL(page.url()).pathname.split('/').at(-1) ?? '')
    const appUrl = `/api/projects/${projectId}/backend/apps/${appId}`

    // Sources are deployed through the API (the console shows and rolls back): two good ones, then one that cannot build.
    const deploy = async (archive: Buffer) => {
      const queued = await api('POST', `${appUrl}/deployments`, { uploadId: await uploadSource(app, appUrl, headers, archive) })
      return await deploymentSettled(app, appUrl, headers, queued.json().data.id as string)
    }
    const first = await deploy(packFixture(t, 'node-hello'))
    const second = await deploy(packFixture(t, 'node-hello'))
    const empty = tempDir(t, 'plinth-console-empty-')
    writeFileSync(join(empty, 'README.md'), 'nothing to run\n')
    execFileSync('tar', ['-czf', join(empty, '..', 'empty.tar.gz'), '-C', empty, '.'])
    const broken = await deploy(readFileSync(join(empty, '..', 'empty.tar.gz')))
    t.same([first.state, second.state, broken.state], ['live', 'live', 'build_failed'], 'the deployments settled')

    await page.getByRole('button', { name: 'Refresh' }).click()
    const row = (id: string) => page.getByRole('row').filter({ has: page.getByRole('rowheader', { name: id }) })
    await row(broken.id).waitFor()
    t.match(await row(second.id).innerText(), /\blive\b/, 'the live deployment')
    t.match(await row(first.id).innerText(), /superseded/, 'the earlier one superseded')
    t.match(await row(broken.id).innerText(), /build_failed/, 'the broken one failed to build')
    await page.getByRole('button', { name: `Build log of ${broken.id}` }).click()
    const log = page.getByRole('region', { name: `Build log of ${broken.id}` })
    await t.resolves(log.locator('pre').waitFor(), 'its build log shown')
    await screen(t, 'hosting-app', 'App site')

    t.equal(await page.getByRole('button', { name: `Roll back to ${broken.id}` }).count(), 0, 'no rollback to a deployment that built nothing')
    t.equal(await page.getByRole('button', { name: `Roll back to ${second.id}` }).count(), 0, 'nor to the live one')
    await page.getByRole('button', { name: `Roll back to ${first.id}` }).click()
    const queued = page.getByRole('status').filter({ hasText: `Rollback to ${first.id} queued as` })
    await queued.waitFor()
    const rollbackId = (/queued as (\S+)\.$/.exec(await queued.innerText()) ?? [])[1] ?? ''
    const rolled = await deploymentSettled(app, appUrl, headers, rollbackId)
    t.match(rolled, { state: 'live', trigger: 'rollback', rollbackOf: first.id }, 'the rollback went live with the first artifact')

    await page.getByLabel(/^Secret name/).fill('PORT')
    await page.getByLabel('Secret value').fill('1')
    await page.getByRole('button', { name: 'Set secret' }).click()
    await t.resolves(page.getByRole('alert').filter({ hasText: 'APP_HOSTING_SECRET_INVALID' }).waitFor(), 'a platform variable is refused')
    await page.getByLabel(/^Secret name/).fill('API_KEY')
    await page.getByLabel('Secret value').fill('very secret value')
    await page.getByLabel('Give it to builds too').check()
    await page.getByRole('button', { name: 'Set secret' }).click()
    await page.getByRole('rowheader', { name: 'API_KEY' }).waitFor()
    t.notOk((await page.content()).includes('very secret value'), 'the value is not on the page')
    t.match((await api('GET', `${appUrl}/secrets`)).json().data, [{ name: 'API_KEY', buildTime: true, version: 1 }], 'the secret set')
    await screen(t, 'hosting-secrets', 'App site')
    await page.getByRole('button', { name: 'Delete secret API_KEY' }).click()
    await page.getByText('No secret yet.').waitFor()
    t.same((await api('GET', `${appUrl}/secrets`)).json().data, [], 'and deleted')
  })

  t.same([...hosts], ['127.0.0.1'], 'no request left loopback')
  t.same(readdirSync(screens).length, recorder.count, 'a screenshot of each screen')
})
