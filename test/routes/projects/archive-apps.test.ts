import t from 'tap'
import { randomBytes } from 'node:crypto'
import { gunzipSync } from 'node:zlib'
import { buildTestApp, call, orgWithRoles } from '../../helper.js'
import { entriesOf, forge, importArchive } from './archive-fixtures.js'
import { deploymentSettled, packFixture, uploadSource, viaGateway, waitFor } from '../hosting/fixtures.js'

t.test('hosting apps travel: definitions, git source by repository, secret names only, the uploaded source; the import serves them', async (t) => {
  const source = await buildTestApp(t, { env: { GATEWAY_PORT: '0' } })
  const roles = await orgWithRoles(source)
  const { owner } = roles
  const projectId = (await call(source, 'POST', '/api/projects', owner.auth, { orgId: roles.orgId, name: 'Shop' })).body.data.id as string
  const base = `/api/projects/${projectId}/backend`
  const site = (await call(source, 'POST', `${base}/static-apps`, owner.auth, { name: 'shop-site', spaFallback: true })).body.data
  const siteUrl = `${base}/static-apps/${site.id as string}`
  const deployment = await call(source, 'POST', `${siteUrl}/deployments`, owner.auth, { uploadId: await uploadSource(source, siteUrl, owner.auth, packFixture(t, 'static-site')) })
  t.equal((await deploymentSettled(source, siteUrl, owner.auth, deployment.body.data.id)).state, 'live')
  const repo = await call(source, 'POST', `/api/projects/${projectId}/git/repositories`, owner.auth, { name: 'Web' })
  t.equal(repo.status, 201, JSON.stringify(repo.body))
  const web = (await call(source, 'POST', `${base}/apps`, owner.auth, { name: 'shop-web', healthCheckPath: '/health', scaling: { instances: 2 } })).body.data
  const gitSource = await call(source, 'PUT', `${base}/apps/${web.id as string}/git-source`, owner.auth, { repositoryId: repo.body.data.id, branch: 'main', subdirectory: 'app' })
  t.equal(gitSource.status, 200, JSON.stringify(gitSource.body))
  const secret = `s3cret-${randomBytes(8).toString('hex')}`
  t.equal((await call(source, 'PUT', `${base}/apps/${web.id as string}/secrets/API_TOKEN`, owner.auth, { value: secret })).status, 200)

  const exported = await source.inject({ method: 'POST', url: `/api/projects/${projectId}/export`, headers: owner.auth })
  t.equal(exported.statusCode, 200, exported.body)
  const archive = exported.rawPayload
  const entries = await entriesOf(archive)
  const manifest = JSON.parse((entries.get('manifest.json') as Buffer).toString('utf8'))
  t.equal(manifest.counts.apps, 2)
  const siteEntry = JSON.parse((entries.get('hosting/shop-site.json') as Buffer).toString())
  t.match(siteEntry, { kind: 'static', spaFallback: true, secrets: [], live: { type: 'upload', sha256: /^[0-9a-f]{64}$/ } })
  t.ok(entries.has('hosting/shop-site.source'), 'the uploaded source travels')
  t.match(JSON.parse((entries.get('hosting/shop-web.json') as Buffer).toString()), {
    kind: 'container', healthCheckPath: '/health', scaling: { instances: 2 }, gitSource: { repository: 'web', url: null, branch: 'main', subdirectory: 'app' }, secrets: ['API_TOKEN'], live: null
  })
  t.notOk(gunzipSync(archive).includes(Buffer.from(secret)), 'no secret value is in the archive')

  const target = await buildTestApp(t, { env: { GATEWAY_PORT: '0' } })
  const there = await orgWithRoles(target)
  const imported = await importArchive(target, there.orgId, there.owner.auth, archive)
  t.equal(imported.status, 201, JSON.stringify(imported.body))
  t.equal(imported.body.data.counts.apps, 2)
  const copyId = imported.body.data.project.id as string
  const copyBase = `/api/projects/${copyId}/backend`
  const [copySite] = (await call(target, 'GET', `${copyBase}/static-apps`, there.owner.auth)).body.data
  t.match(copySite, { name: 'shop-site', spaFallback: true })
  const copySiteUrl = `${copyBase}/static-apps/${copySite.id as string}`
  const live = await waitFor('the imported site live', async () => (await call(target, 'GET', copySiteUrl, there.owner.auth)).body.data, (app) => app.currentDeployment?.state === 'live' || app.currentDeployment?.state === 'failed' || app.currentDeployment?.state === 'build_failed')
  t.equal(live.currentDeployment.state, 'live', JSON.stringify(live.currentDeployment))
  const served = await viaGateway(target.hosting.gatewayPort() as number, 'shop-site.apps.localhost')
  t.equal(served.status, 200)
  t.match(served.body, /static home/, 'the imported project serves the same app')
  const [copyWeb] = (await call(target, 'GET', `${copyBase}/apps`, there.owner.auth)).body.data
  const copyRepo = (await call(target, 'GET', `/api/projects/${copyId}/git/repositories`, there.owner.auth)).body.data[0]
  t.match(copyWeb, { name: 'shop-web', healthCheckPath: '/health', scaling: { instances: 2 }, gitSource: { repositoryId: copyRepo.id, branch: 'main', subdirectory: 'app' }, currentDeployment: null })
  t.same((await call(target, 'GET', `${copyBase}/apps/${copyWeb.id as string}/secrets`, there.owner.auth)).body.data, [], 'secrets are set again by whoever imports')

  await t.test('names are the server\'s: imported where they are taken, an app gets a suffixed name', async (t) => {
    const again = await importArchive(source, roles.orgId, owner.auth, archive)
    t.equal(again.status, 201, JSON.stringify(again.body))
    const apps = (await call(source, 'GET', `/api/projects/${again.body.data.project.id as string}/backend/static-apps`, owner.auth)).body.data
    t.match(apps, [{ name: /^shop-site-[0-9a-f]{8}$/ }])
  })

  await t.test('an app whose deployment cannot be asked for once the project is revealed: the project stays, the answer names the app', async (t) => {
    const unknownCommit = new Map(entries)
    const webEntry = JSON.parse((entries.get('hosting/shop-web.json') as Buffer).toString())
    unknownCommit.set('hosting/shop-web.json', Buffer.from(JSON.stringify({ ...webEntry, live: { type: 'git', commit: 'f'.repeat(40) } })))
    const res = await importArchive(target, there.orgId, there.owner.auth, await forge(unknownCommit, manifest))
    t.equal(res.status, 201, JSON.stringify(res.body))
    t.match(res.body.data.deployFailures, [{ app: 'shop-web', code: /^APP_/, message: /./ }], 'the one app that failed, by name')
    t.equal(res.body.data.deployFailures.length, 1, 'the other app deployed')
    const id = res.body.data.project.id as string
    t.equal((await call(target, 'GET', `/api/projects/${id}`, there.owner.auth)).status, 200, 'the project is there, not deleted')
    const apps = (await call(target, 'GET', `/api/projects/${id}/backend/apps`, there.owner.auth)).body.data
    t.match(apps, [{ name: 'shop-web', state: 'created', currentDeployment: null }], 'the app stays as created')
    const timeline = (await call(target, 'GET', `/api/projects/${id}/backend/apps/${apps[0].id as string}/timeline`, there.owner.auth)).body.data
    t.match(timeline, [{ type: 'import.deploy_failed', message: /could not deploy/ }], 'its timeline says why')
    const [site] = (await call(target, 'GET', `/api/projects/${id}/backend/static-apps`, there.owner.auth)).body.data
    t.not(site.currentDeployment, null, 'the app that could be deployed was')
    t.same(imported.body.data.deployFailures, [], 'an import that deployed everything names none')
  })

  await t.test('an app entry that does not hold together is refused naming it, and nothing is left', async (t) => {
    const before = (await call(target, 'GET', '/api/projects', there.owner.auth)).body.data.length
    const orphanSource = new Map(entries)
    orphanSource.delete('hosting/shop-site.json')
    const noSource = new Map(entries)
    noSource.delete('hosting/shop-site.source')
    const noRepo = new Map(entries)
    noRepo.delete('git/web.json')
    const badName = new Map(entries)
    badName.set('hosting/Shop_Site.json', entries.get('hosting/shop-site.json') as Buffer)
    const wrongSha = new Map(entries)
    wrongSha.set('hosting/shop-site.json', Buffer.from(JSON.stringify({ ...siteEntry, live: { type: 'upload', sha256: '0'.repeat(64) } })))
    const cases: Array<[string, Map<string, Buffer>, RegExp]> = [
      ['a source without its app', orphanSource, /hosting\/shop-site\.source belongs to no app built from an upload/],
      ['an upload-built app without its source', noSource, /hosting\/shop-site\.json was built from an upload the archive does not hold/],
      ['a git source naming a repository not in the archive', noRepo, /hosting\/shop-web\.json deploys from web, which the archive does not describe/],
      ['a name that is no app name', badName, /"hosting\/Shop_Site\.json", which is not an entry/],
      ['a source that is not what the app says it built (found while writing)', wrongSha, /hosting\/shop-site\.json: .*checksum|sha-?256/i]
    ]
    for (const [name, bad, why] of cases) {
      const res = await importArchive(target, there.orgId, there.owner.auth, await forge(bad, manifest))
      t.same([res.status, res.body.code], [400, 'APP_PROJECT_ARCHIVE_INVALID'], name)
      t.match(res.body.message, why, name)
    }
    t.equal((await call(target, 'GET', '/api/projects', there.owner.auth)).body.data.length, before, 'no project was left behind')
  })
})
