import t from 'tap'
import { trackerSetup } from '../tracker/fixtures.js'
import { mcpClient, refusalOf } from './mcp-client.js'

t.test('git, DNS and hosting tools over MCP with the SDK client answer what their routes answer, and refuse as they refuse', async (t) => {
  const s = await trackerSetup(t)
  await s.app.listen({ port: 0, host: '127.0.0.1' })
  const project = `/api/projects/${s.projectId}`
  const owner = await mcpClient(t, s, s.owner.token)
  const read = async (name: string, args: object = {}): Promise<any> => {
    const answer = await owner.call(name, args)
    t.notOk(answer.isError, `${name}: ${JSON.stringify(answer.content)}`)
    return answer.structuredContent
  }
  const restCode = async (path: string): Promise<string> => (await s.api('GET', `${project}${path}`, s.owner.auth)).body.code as string

  await t.test('git: repositories, a file at a revision, the history', async (t) => {
    await s.must('POST', `${project}/git/repositories`, s.owner.auth, { name: 'Site', slug: 'site', readme: true })
    t.same(await read('git_repositories_list'), { items: await s.must('GET', `${project}/git/repositories`, s.owner.auth) })
    const file = await read('git_file_read', { repoSlug: 'site', query: { path: 'README.md' } })
    t.same(file, await s.must('GET', `${project}/git/repositories/site/blob?path=README.md`, s.owner.auth))
    t.match(file.content, /Site/)
    const commits = await read('git_commits_list', { repoSlug: 'site' })
    t.same(commits, await s.must('GET', `${project}/git/repositories/site/commits`, s.owner.auth))
    t.equal(commits.items.length, 1)
    const atSha = await read('git_file_read', { repoSlug: 'site', query: { path: 'README.md', ref: commits.items[0].sha } })
    t.equal(atSha.content, file.content, 'at a commit id')
    t.equal(refusalOf(await owner.call('git_file_read', { repoSlug: 'site', query: { path: 'nope.md' } })).code, await restCode('/git/repositories/site/blob?path=nope.md'))
    t.equal(refusalOf(await owner.call('git_commits_list', { repoSlug: 'gone' })).code, await restCode('/git/repositories/gone/commits'))
  })

  await t.test('DNS: zones and their records', async (t) => {
    const zone = await s.must('POST', `${project}/dns/zones`, s.owner.auth, { name: 'tools.example' })
    t.same(await read('dns_zones_list'), { items: await s.must('GET', `${project}/dns/zones`, s.owner.auth) })
    const records = await read('dns_records_list', { zoneId: zone.id })
    t.same(records, { items: await s.must('GET', `${project}/dns/records?zoneId=${zone.id as string}`, s.owner.auth) })
    t.ok(records.items.some((record: { type: string }) => record.type === 'SOA'), 'the SOA among them')
    t.same(await read('dns_records_list', { zoneId: zone.id, type: 'NS' }), { items: await s.must('GET', `${project}/dns/records?zoneId=${zone.id as string}&type=NS`, s.owner.auth) })
    t.equal(refusalOf(await owner.call('dns_records_list', { zoneId: 'zone404' })).code, await restCode('/dns/records?zoneId=zone404'))
  })

  await t.test('hosting: apps, their deployments and their logs', async (t) => {
    const app = await s.must('POST', `${project}/backend/apps`, s.owner.auth, { name: 'web' })
    t.same(await read('hosting_apps_list'), { items: await s.must('GET', `${project}/backend/apps`, s.owner.auth) })
    t.same(await read('hosting_deployments_list', { appId: app.id }), { items: await s.must('GET', `${project}/backend/apps/${app.id as string}/deployments`, s.owner.auth) })
    t.same(await read('hosting_logs_read', { appId: app.id, kind: 'build', query: { limit: 10 } }), { items: await s.must('GET', `${project}/backend/apps/${app.id as string}/logs/build?limit=10`, s.owner.auth) })
    t.equal(refusalOf(await owner.call('hosting_logs_read', { appId: 'app404', kind: 'runtime' })).code, await restCode('/backend/apps/app404/logs/runtime'))
    t.equal(refusalOf(await owner.call('hosting_logs_read', { appId: app.id, kind: 'everything' })).code, 'APP_VALIDATION_FAILED')
  })

  await t.test('each family\'s tools are offered only to a caller holding its read permission now', async (t) => {
    const families = ['git_repositories_list', 'dns_zones_list', 'hosting_apps_list']
    const viewer = await mcpClient(t, s, s.viewer.token)
    t.same((await viewer.names()).filter((name) => families.includes(name)).sort(), [...families].sort(), 'the viewer reads every family')
    const pat = await s.must('POST', '/api/auth/api-keys', s.owner.auth, { name: 'dns-only', scopes: ['tracker.read', 'dns.read'] })
    const scoped = await mcpClient(t, s, pat.token as string)
    t.same((await scoped.names()).filter((name) => families.includes(name)), ['dns_zones_list'], 'a PAT scoped to dns.read gets the DNS tools alone')
    const refused = await scoped.call('hosting_apps_list', {})
    t.match(refusalOf(refused), { code: 'APP_FORBIDDEN', details: { permission: 'hosting.read' } })
  })
})
