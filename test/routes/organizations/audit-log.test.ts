import t from 'tap'
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { ConfigError } from '../../../services/platform/config-env.js'
import { parseAuditConfig } from '../../../services/audit/config.js'
import { AUDIT_PRUNE_JOB } from '../../../services/audit/log.js'
import { setTimeout as delay } from 'node:timers/promises'
import { buildTestApp, call, orgWithRoles, signUp, tempDir } from '../../helper.js'
import { deploymentSettled, packFixture, uploadSource } from '../hosting/fixtures.js'

/**
 * The audit log: each change kind a platform user or PAT makes leaves an
 * entry with its actor, credential, address, target and the names of the
 * fields set (never a value); the organization's log is readable with
 * `audit.read` only, filters and pages.
 */

const SECRET_VALUE = 'sesame-audit-7f3a9c1e'
const PASSWORD = 'correct horse battery'

t.test('an entry for each change, no secret value in any, audit.read to read them', async (t) => {
  const app = await buildTestApp(t)
  const { owner, member, viewer, orgId } = await orgWithRoles(app)
  const org = `/api/organizations/${orgId}`

  const login = await app.inject({ method: 'POST', url: '/api/auth/login', payload: { email: 'owner@example.com', password: PASSWORD }, remoteAddress: '192.0.2.7' })
  t.equal(login.statusCode, 200)
  const pat = await call(app, 'POST', '/api/auth/api-keys', owner.auth, { name: 'ci' })
  t.equal(pat.status, 201)
  const asPat = { authorization: `Bearer ${pat.body.data.token as string}` }
  const dir = tempDir(t)
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'laptop', '-f', join(dir, 'id')])
  t.equal((await call(app, 'POST', '/api/auth/ssh-keys', owner.auth, { title: 'Laptop', key: readFileSync(join(dir, 'id.pub'), 'utf8') })).status, 201)

  const newcomer = await signUp(app, 'newcomer@example.com')
  t.equal((await call(app, 'POST', `${org}/members`, asPat, { userId: newcomer.id, role: 'viewer' })).status, 201)
  t.equal((await call(app, 'PUT', `${org}/members/${newcomer.id}`, owner.auth, { role: 'member' })).status, 200)
  t.equal((await call(app, 'PUT', `${org}/members/${newcomer.id}/permissions`, owner.auth, { permissions: [{ permission: 'dns.manage', projectId: null }] })).status, 200)
  const projectId = (await call(app, 'POST', '/api/projects', owner.auth, { orgId, name: 'Shop' })).body.data.id as string
  const project = `/api/projects/${projectId}`
  t.equal((await call(app, 'POST', `${project}/collections`, owner.auth, { name: 'posts', fields: [{ name: 'title', type: 'text' }] })).status, 201)
  const token = await call(app, 'POST', `${project}/service-tokens`, owner.auth, { name: 'backend' })
  t.equal(token.status, 201)
  const zone = await call(app, 'POST', `${project}/dns/zones`, owner.auth, { name: 'audit.example' })
  t.equal(zone.status, 201)
  const hostedApp = await call(app, 'POST', `${project}/backend/apps`, owner.auth, { name: 'hello' })
  t.equal(hostedApp.status, 201)
  t.equal((await call(app, 'PUT', `${project}/backend/apps/${hostedApp.body.data.id as string}/secrets/STRIPE_KEY`, owner.auth, { value: SECRET_VALUE })).status, 200)
  t.equal((await call(app, 'DELETE', `/api/auth/api-keys/${pat.body.data.id as string}`, owner.auth)).status, 200)
  // Refused and read-only calls leave nothing.
  t.equal((await call(app, 'POST', `${org}/members`, viewer.auth, { userId: newcomer.id, role: 'viewer' })).status, 403)
  await call(app, 'GET', `${org}/members`, owner.auth)

  t.match((await call(app, 'GET', `${org}/audit-log`, member.auth)).body, { success: false, code: 'APP_FORBIDDEN', details: { permission: 'audit.read' } }, 'a member without audit.read')
  t.equal((await call(app, 'GET', `${org}/audit-log`, member.auth)).status, 403)
  const outsider = await signUp(app, 'nosy@example.com')
  t.equal((await call(app, 'GET', `${org}/audit-log`, outsider.auth)).status, 404, 'an outsider learns nothing')

  const read = await call(app, 'GET', `${org}/audit-log?limit=100`, owner.auth)
  t.equal(read.status, 200)
  const entries = read.body.data.items as Array<{ action: string, actor: { userId: string, credential: string }, address: string, target: { id: string | null, params: Record<string, string> }, summary: { fields: string[] }, orgId: string | null, projectId: string | null }>
  const byAction = new Map([...entries].reverse().map((entry) => [entry.action, entry])) // the newest of each action
  const expected: Array<[string, string]> = [
    ['loginPlatformUser', 'sign-in'],
    ['createApiKey', 'a PAT'],
    ['revokeApiKey', 'a PAT revoked'],
    ['addSshKey', 'an SSH key'],
    ['addMember', 'a member'],
    ['changeMemberRole', 'a role'],
    ['setMemberGrants', 'grants'],
    ['createProject', 'a project'],
    ['createCollection', 'a collection definition'],
    ['createServiceToken', 'a service token'],
    ['createDnsZone', 'a DNS change'],
    ['putHostingAppSecret', 'a secret, by name']
  ]
  for (const [action, what] of expected) t.ok(byAction.has(action), `${what}: ${action} (${[...byAction.keys()].join(', ')})`)

  t.match(byAction.get('loginPlatformUser'), { actor: { userId: owner.id, credential: 'password' }, address: '192.0.2.7', orgId: null, summary: { fields: ['email', 'password'] } })
  t.match(byAction.get('addMember'), { actor: { userId: owner.id, credential: 'pat' }, orgId, target: { id: newcomer.id } })
  t.match(byAction.get('changeMemberRole'), { actor: { credential: 'session' }, target: { id: newcomer.id }, summary: { fields: ['role'] } })
  t.match(byAction.get('createServiceToken'), { orgId, projectId, target: { id: token.body.data.id } })
  t.match(byAction.get('createDnsZone'), { projectId, target: { id: zone.body.data.id } })
  t.match(byAction.get('putHostingAppSecret'), { target: { id: 'STRIPE_KEY' }, summary: { fields: ['value'] } })
  t.notOk(entries.some((entry) => entry.summary.fields.length > 0 && entry.action === 'addMember' && entry.actor.userId === viewer.id), 'the refused add left nothing')

  const stored = JSON.stringify(await app.store.collection('audit_log').find({}).toArray())
  for (const secret of [SECRET_VALUE, PASSWORD, pat.body.data.token as string, token.body.data.token as string, owner.token]) t.notOk(stored.includes(secret), 'no secret value is stored')

  const mine = await call(app, 'GET', `${org}/audit-log?actor=${newcomer.id}`, owner.auth)
  t.same(mine.body.data.items, [], 'filtered by actor')
  const about = await call(app, 'GET', `${org}/audit-log?target=${newcomer.id}`, owner.auth)
  t.same(about.body.data.items.map((entry: { action: string }) => entry.action), ['setMemberGrants', 'changeMemberRole', 'addMember'], 'filtered by target, newest first')
  const adds = await call(app, 'GET', `${org}/audit-log?action=addMember`, owner.auth)
  t.ok(adds.body.data.items.length >= 3 && adds.body.data.items.every((entry: { action: string }) => entry.action === 'addMember'))
  t.same((await call(app, 'GET', `${org}/audit-log?until=2001-01-01T00:00:00Z`, owner.auth)).body.data.items, [], 'a time range')

  const pages: string[] = []
  let cursor: string | null = null
  do {
    const page = await call(app, 'GET', `${org}/audit-log?limit=5${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`, owner.auth)
    t.equal(page.status, 200)
    pages.push(...page.body.data.items.map((entry: { id: string }) => entry.id))
    cursor = page.body.data.nextCursor
  } while (cursor !== null)
  t.same(pages, entries.map((entry) => (entry as unknown as { id: string }).id), 'keyset pages walk the same list')
  t.equal((await call(app, 'GET', `${org}/audit-log?cursor=garbage`, owner.auth)).body.code, 'APP_INVALID_CURSOR')

  // Another organization's log holds none of this one's changes.
  const otherOrg = (await call(app, 'POST', '/api/organizations', outsider.auth, { name: 'Elsewhere' })).body.data.id as string
  const theirs = (await call(app, 'GET', `/api/organizations/${otherOrg}/audit-log?limit=100`, outsider.auth)).body.data.items as Array<{ actor: { userId: string } }>
  t.ok(theirs.length >= 1 && theirs.every((entry) => entry.actor.userId === outsider.id), 'only the other organization\'s own')
})

t.test('retention: the prune deletes entries older than AUDIT_RETENTION_DAYS', async (t) => {
  const app = await buildTestApp(t, { env: { AUDIT_RETENTION_DAYS: '30' } })
  t.equal(app.config.audit.retentionDays, 30)
  // The daily prune's first run is due at start: let it pass first, so the prune below is the only one at work.
  for (const deadline = Date.now() + 20_000; ;) {
    const daily = await app.jobs.jobs.findOne({ type: AUDIT_PRUNE_JOB })
    if (daily !== null && daily.status === 'queued' && daily.runAt.getTime() > Date.now() + 60 * 60_000) break
    if (Date.now() > deadline) throw new Error('the daily prune did not make its first run')
    await delay(50)
  }
  const base = { orgId: 'o', projectId: null, actorId: 'u', credential: 'session' as const, address: '127.0.0.1', action: 'a', method: 'POST', route: '/api/x', targetId: null, params: {}, fields: [], status: 200 }
  await app.audit.append(base)
  await app.store.collection('audit_log').insertOne({ ...base, _id: 'old-entry', at: new Date(Date.now() - 31 * 24 * 60 * 60_000) })
  t.equal(await app.audit.prune(app.config.audit.retentionDays), 1)
  t.equal(await app.store.collection('audit_log').countDocuments({}), 1)
})

t.test('AUDIT_RETENTION_DAYS: a default, and a bad value stops the start naming it', async (t) => {
  t.same(parseAuditConfig({}), { retentionDays: 365 })
  for (const value of ['0', 'forever', '-3']) {
    const error = (() => { try { parseAuditConfig({ AUDIT_RETENTION_DAYS: value }) } catch (caught) { return caught } })()
    t.ok(error instanceof ConfigError && error.variable === 'AUDIT_RETENTION_DAYS', `${value} is refused`)
  }
})

t.test('hosting deploys, git protection rules, tracker settings and collection rules leave entries too', async (t) => {
  const app = await buildTestApp(t)
  const { owner, orgId } = await orgWithRoles(app)
  const projectId = (await call(app, 'POST', '/api/projects', owner.auth, { orgId, name: 'Works' })).body.data.id as string
  const project = `/api/projects/${projectId}`
  t.equal((await call(app, 'POST', `${project}/collections`, owner.auth, { name: 'posts', fields: [{ name: 'title', type: 'text' }] })).status, 201)
  const rules = await call(app, 'PUT', `${project}/collections/posts`, owner.auth, { fields: [{ name: 'title', type: 'text' }], methods: { list: { enabled: true, rule: { requireAuth: true } } } })
  t.equal(rules.status, 200, JSON.stringify(rules.body))
  t.equal((await call(app, 'POST', `${project}/git/repositories`, owner.auth, { name: 'Repo' })).status, 201)
  t.equal((await call(app, 'POST', `${project}/git/repositories/repo/protected-branches`, owner.auth, { pattern: 'main' })).status, 201)
  const tracker = await call(app, 'POST', `${project}/tracker/projects`, owner.auth, { name: 'Website', identifier: 'web' })
  t.equal(tracker.status, 201)
  t.equal((await call(app, 'PATCH', `${project}/tracker/projects/${tracker.body.data.id as string}/automations`, owner.auth, { autoCloseMonths: 1 })).status, 200)
  const appUrl = `${project}/backend/apps/${(await call(app, 'POST', `${project}/backend/apps`, owner.auth, { name: 'hello' })).body.data.id as string}`
  const uploadId = await uploadSource(app, appUrl, owner.auth, packFixture(t, 'node-hello'))
  const deployed = await call(app, 'POST', `${appUrl}/deployments`, owner.auth, { uploadId })
  t.ok(deployed.status === 201 || deployed.status === 202, `deployment accepted (${deployed.status})`)
  await deploymentSettled(app, appUrl, owner.auth, deployed.body.data.id as string)

  const read = await call(app, 'GET', `/api/organizations/${orgId}/audit-log?limit=100`, owner.auth)
  t.equal(read.status, 200, JSON.stringify(read.body))
  const actions = new Map((read.body.data.items as Array<{ action: string, projectId: string | null, summary: { fields: string[] } }>).map((entry) => [entry.action, entry]))
  for (const [action, what] of [
    ['updateCollection', 'a collection\'s rules'],
    ['createGitProtectedBranch', 'a git protection rule'],
    ['updateTrackerAutomations', 'tracker settings'],
    ['deployHostingAppFromUpload', 'a hosting deploy']
  ]) t.match(actions.get(action), { projectId }, `${what}: ${action} (${[...actions.keys()].join(', ')})`)
  t.ok(actions.get('updateCollection')?.summary.fields.includes('methods'), 'the rules are named as changed')
})

t.test('work items and what hangs off them are content, with their own activity: no entries, while the tracker\'s settings have theirs', async (t) => {
  const app = await buildTestApp(t)
  const { owner, orgId } = await orgWithRoles(app)
  const projectId = (await call(app, 'POST', '/api/projects', owner.auth, { orgId, name: 'Works' })).body.data.id as string
  const lp = `/api/projects/${projectId}/tracker/projects/${(await call(app, 'POST', `/api/projects/${projectId}/tracker/projects`, owner.auth, { name: 'Website', identifier: 'web' })).body.data.id as string}`
  t.equal((await call(app, 'PATCH', `${lp}/automations`, owner.auth, { autoCloseMonths: 1 })).status, 200)
  const item = await call(app, 'POST', `${lp}/work-items`, owner.auth, { title: 'Broken link' })
  t.equal(item.status, 201)
  const itemUrl = `${lp}/work-items/${item.body.data.id as string}`
  t.equal((await call(app, 'PATCH', itemUrl, owner.auth, { priority: 'high' })).status, 200)
  t.equal((await call(app, 'POST', `${itemUrl}/comments`, owner.auth, { body: 'Seen on the front page' })).status, 201)
  t.equal((await call(app, 'POST', `${itemUrl}/links`, owner.auth, { url: 'https://example.com/bug' })).status, 201)

  const read = await call(app, 'GET', `/api/organizations/${orgId}/audit-log?limit=100`, owner.auth)
  t.equal(read.status, 200, JSON.stringify(read.body))
  const actions = (read.body.data.items as Array<{ action: string }>).map((entry) => entry.action)
  t.ok(actions.includes('updateTrackerAutomations'), `the automations are a setting (${actions.join(', ')})`)
  t.notOk(actions.some((action) => /WorkItem|Comment|Link/.test(action)), `nothing for the item, its comment or link (${actions.join(', ')})`)
  const activity = await call(app, 'GET', `${itemUrl}/activity`, owner.auth)
  t.equal(activity.status, 200, JSON.stringify(activity.body))
  t.ok(activity.body.data.items.some((entry: { field: string, actorId: string }) => entry.field === 'created' && entry.actorId === owner.id), 'the item\'s activity says who created it')
  // A delete takes the item's activity with it from every reader: the audit log keeps who deleted what.
  t.equal((await call(app, 'DELETE', itemUrl, owner.auth)).status, 200)
  const after = await call(app, 'GET', `/api/organizations/${orgId}/audit-log?limit=100`, owner.auth)
  const deleted = (after.body.data.items as Array<{ action: string, actor: { userId: string } }>).filter((entry) => /WorkItem/.test(entry.action))
  t.same(deleted.map((entry) => entry.action), ['deleteTrackerWorkItem'], 'the delete, and only it, has an entry')
  t.equal(deleted[0]?.actor.userId, owner.id, 'naming who deleted it')
})
