import t from 'tap'
import type { AddressInfo } from 'node:net'
import { buildTestApp } from '../helper.js'
import { createAdmin, PlinthError } from '../../sdk/admin/index.js'
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
  await admin.collections.create(project.id, { name: 'notes', fields: [{ name: 'title', type: 'text' }] })
  await admin.collections.update(project.id, 'notes', { fields: [{ name: 'title', type: 'text' }, { name: 'done', type: 'boolean' }] })
  t.same((await admin.collections.get(project.id, 'notes')).fields.map((field) => field.name), ['title', 'done'], 'a definition changed')
  t.ok((await admin.collections.list(project.id)).some((c) => c.name === 'notes'), 'listed')

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

  // DNS: a zone and a record.
  const zone = await admin.dns.createZone(project.id, { name: 'engines.test' })
  await admin.dns.createRecord(project.id, { zoneId: zone.id, name: 'www', type: 'A', content: '192.0.2.7' })
  t.match((await admin.dns.records(project.id, { zoneId: zone.id })).filter((record) => record.type === 'A'), [{ name: 'www.engines.test', content: '192.0.2.7' }])

  const missing = await admin.git.repository(project.id, 'no-such-repo').catch((error: unknown) => error)
  t.ok(missing instanceof PlinthError)
  t.match(missing, { status: 404, code: /^APP_/, message: /./ }, 'errors: status, code, message')
})
