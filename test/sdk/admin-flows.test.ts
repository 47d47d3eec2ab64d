import t from 'tap'
import type { AddressInfo } from 'node:net'
import { buildTestApp } from '../helper.js'
import { createAdmin, memoryStorage, PlinthError } from '../../sdk/admin/index.js'
import { createClient } from '../../sdk/client/index.js'

t.test('each family\'s main flow through the admin SDK', async (t) => {
  const app = await buildTestApp(t)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const baseUrl = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
  const admin = createAdmin({ baseUrl })
  await admin.auth.register({ email: 'ada@example.com', password: 'correct horse battery', name: 'Ada' })
  await admin.auth.login({ email: 'ada@example.com', password: 'correct horse battery' })

  // Organizations, projects, collection definitions.
  const org = await admin.organizations.create({ name: 'Engines' })
  t.same((await admin.organizations.list()).map((o) => o.id), [org.id])
  const project = await admin.projects.create({ orgId: org.id, name: 'Notes' })
  t.equal((await admin.projects.update(project.id, { name: 'Notebook' })).name, 'Notebook')
  await admin.projects.setAuth(project.id, true)
  t.equal(await admin.projects.emailSettings(project.id), null, 'no email settings yet: null, not a refusal')
  await admin.collections.create(project.id, { name: 'notes', fields: [{ name: 'title', type: 'text' }] })
  await admin.collections.update(project.id, 'notes', { fields: [{ name: 'title', type: 'text' }, { name: 'done', type: 'boolean' }] })
  t.same((await admin.collections.get(project.id, 'notes')).fields.map((field) => field.name), ['title', 'done'], 'a definition changed')
  t.ok((await admin.collections.list(project.id)).some((c) => c.name === 'notes'), 'listed')

  // Members: added by email, their role changed, removed.
  await admin.auth.register({ email: 'cy@example.com', password: 'correct horse battery', name: 'Cy' })
  const cy = await admin.organizations.addMember(org.id, { email: 'cy@example.com', role: 'viewer' })
  t.equal((await admin.organizations.setMemberRole(org.id, cy.id, 'member')).role, 'member', 'a member\'s role changed')
  await admin.organizations.removeMember(org.id, cy.id)
  t.same((await admin.organizations.members(org.id)).map((member) => member.email), ['ada@example.com'], 'and removed')

  // Service tokens and verify.
  const service = await admin.serviceTokens.create(project.id, { name: 'backend' })
  const bob = createClient({ baseUrl, projectId: project.id })
  const session = await bob.auth.signUp({ email: 'bob@example.com', password: 'long enough 1' })
  t.match(await admin.serviceTokens.verify(project.id, service.token, session.accessToken), { user: { id: session.user.id } }, 'a live end-user token verifies')
  await admin.serviceTokens.revoke(project.id, service.id)
  t.match(await admin.serviceTokens.verify(project.id, service.token, session.accessToken).catch((error: unknown) => error), { name: 'PlinthError', status: 401 }, 'a revoked service token does not')

  // Git: a repository and its refs.
  const repo = await admin.git.createRepository(project.id, { name: 'site', defaultBranch: 'main', readme: true })
  t.same((await admin.git.branches(project.id, repo.slug)).map((branch) => branch.name), ['main'], 'the initial branch')
  t.equal((await admin.git.commits(project.id, repo.slug)).items.length, 1, 'its first commit')
  t.same((await admin.git.tree(project.id, repo.slug)).entries.map((entry) => entry.path), ['README.md'], 'its tree')
  t.match(await admin.git.blob(project.id, repo.slug, { path: 'README.md', ref: 'main' }), { encoding: 'utf8', content: /site/ }, 'a file of it')

  // DNS: a zone and a record.
  const zone = await admin.dns.createZone(project.id, { name: 'engines.test' })
  await admin.dns.createRecord(project.id, { zoneId: zone.id, name: 'www', type: 'A', content: '192.0.2.7' })
  t.match((await admin.dns.records(project.id, { zoneId: zone.id })).filter((record) => record.type === 'A'), [{ name: 'www.engines.test', content: '192.0.2.7' }])

  const missing = await admin.git.repository(project.id, 'no-such-repo').catch((error: unknown) => error)
  t.ok(missing instanceof PlinthError)
  t.match(missing, { status: 404, code: /^APP_/, message: /./ }, 'errors: status, code, message')
})

t.test('the admin\'s platform session: refreshed when due, and when the server refuses an expired token', async (t) => {
  const app = await buildTestApp(t)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const baseUrl = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
  const refreshes: string[] = []
  const counting = async (request: Request): Promise<Response> => {
    const response = await fetch(request)
    if (new URL(request.url).pathname === '/api/auth/refresh') refreshes.push(String(response.status))
    return response
  }
  const storage = memoryStorage()
  const admin = createAdmin({ baseUrl, storage, storageKey: 'console', fetch: counting })
  await admin.auth.register({ email: 'ada@example.com', password: 'correct horse battery', name: 'Ada' })
  const login = await admin.auth.login({ email: 'ada@example.com', password: 'correct horse battery' })
  t.same(JSON.parse(storage.get('console') as string).refreshToken, login.refreshToken, 'login keeps the session in the storage given')

  // The access token ended before the time kept for it (a clock that is off): the 401 is answered by one refresh.
  const expired = app.jwt.sign({ sub: login.user.id, sid: 'any', type: 'platform', iat: Math.floor(Date.now() / 1000) - 3600 })
  t.equal((await app.inject({ method: 'GET', url: '/api/auth/me', headers: { authorization: `Bearer ${expired}` } })).statusCode, 401, 'the server refuses it')
  storage.set('console', JSON.stringify({ ...login, accessToken: expired }))
  const [orgs, me] = await Promise.all([admin.organizations.list(), admin.auth.me()])
  t.same(orgs, [])
  t.equal(me.email, 'ada@example.com')
  t.same(refreshes, ['200'], 'one refresh for both calls')
  const renewed = await admin.auth.session()
  t.not(renewed?.refreshToken, login.refreshToken, 'the rotated refresh token is kept')

  // Due by the clock kept: refreshed before the call, which then succeeds at once.
  storage.set('console', JSON.stringify({ ...renewed, expiresAt: new Date(Date.now() - 1000).toISOString() }))
  await admin.organizations.create({ name: 'Engines' })
  t.same(refreshes, ['200', '200'], 'a due token is refreshed before the call')

  // A refresh the server refuses ends the session: the call reports the 401.
  const current = await admin.auth.session()
  await app.inject({ method: 'POST', url: '/api/auth/logout', payload: { refreshToken: current?.refreshToken } })
  storage.set('console', JSON.stringify({ ...current, accessToken: expired }))
  t.match(await admin.organizations.list().catch((error: unknown) => error), { name: 'PlinthError', status: 401, code: 'APP_INVALID_TOKEN' })
  t.equal(await admin.auth.session(), null, 'the session is gone')
})

t.test('a project\'s end users through the admin SDK: iterated across pages, filtered, disabled, deleted', async (t) => {
  const app = await buildTestApp(t)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const baseUrl = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
  const admin = createAdmin({ baseUrl })
  await admin.auth.register({ email: 'ada@example.com', password: 'correct horse battery', name: 'Ada' })
  await admin.auth.login({ email: 'ada@example.com', password: 'correct horse battery' })
  const org = await admin.organizations.create({ name: 'Engines' })
  const project = await admin.projects.create({ orgId: org.id, name: 'Shop' })
  await admin.projects.setAuth(project.id, true)
  const emails = ['ann@shop.example', 'bob@example.com', 'cat@shop.example']
  const sessions = []
  for (const email of emails) sessions.push(await createClient({ baseUrl, projectId: project.id }).auth.signUp({ email, password: 'long enough 1' }))

  const seen: string[] = []
  for await (const user of admin.endUsers.iterate(project.id, { limit: 1 })) seen.push(user.email)
  t.same(seen, [...emails].reverse(), 'every user, a page of one at a time, newest first')
  let pages = 0
  for await (const page of admin.endUsers.pages(project.id, { limit: 2, email: '@SHOP.' })) {
    pages++
    t.ok(page.items.every((user) => user.email.endsWith('@shop.example')))
  }
  t.equal(pages, 1, 'two matches fill one page of two')
  const first = await admin.endUsers.list(project.id, { limit: 2 })
  t.type(first.nextCursor, 'string')
  t.notOk('passwordHash' in first.items[0])

  const bob = sessions[1].user.id
  t.equal((await admin.endUsers.setDisabled(project.id, bob, true)).disabled, true)
  t.equal((await admin.endUsers.get(project.id, bob)).disabled, true)
  t.equal((await admin.endUsers.setDisabled(project.id, bob, false)).disabled, false)
  await admin.endUsers.delete(project.id, bob)
  const gone = await admin.endUsers.get(project.id, bob).catch((error: unknown) => error)
  t.match(gone, { name: 'PlinthError', status: 404, code: 'APP_USER_NOT_FOUND' })
  const stale = await admin.endUsers.list(project.id, { limit: 2, email: 'ann', cursor: first.nextCursor ?? '' }).catch((error: unknown) => error)
  t.match(stale, { name: 'PlinthError', status: 400, code: 'APP_INVALID_CURSOR' }, 'a cursor of another filter is refused')
})
