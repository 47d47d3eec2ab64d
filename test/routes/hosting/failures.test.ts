import t from 'tap'
import { execFileSync } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { buildTestApp, call, orgWithRoles, tempDir } from '../../helper.js'
import { deploymentSettled, packFixture, uploadSource, viaGateway } from './fixtures.js'

t.test('a crash on start fails the deployment with its reason; bad archives fail the build; a queued deployment cancels', async (t) => {
  const app = await buildTestApp(t, { env: { GATEWAY_PORT: '0', HOSTING_HEALTH_TIMEOUT_SECONDS: '20', HOSTING_GIT_ALLOWED_HOSTS: '127.0.0.1' } })
  const { owner, member, viewer, orgId } = await orgWithRoles(app)
  const projectId = (await call(app, 'POST', '/api/projects', owner.auth, { orgId, name: 'Broken' })).body.data.id as string
  const base = `/api/projects/${projectId}/backend`
  const appUrl = `${base}/apps/${(await call(app, 'POST', `${base}/apps`, owner.auth, { name: 'crashy' })).body.data.id as string}`

  const crash = await call(app, 'POST', `${appUrl}/deployments`, owner.auth, { uploadId: await uploadSource(app, appUrl, owner.auth, packFixture(t, 'crash-on-start')) })
  const failed = await deploymentSettled(app, appUrl, owner.auth, crash.body.data.id)
  t.match(failed, { state: 'failed', reason: /exited with code 3|code 3/ }, 'failed, saying why')
  t.match((await call(app, 'GET', appUrl, owner.auth)).body.data, { liveDeploymentId: null, instances: [] })
  t.match(JSON.stringify((await call(app, 'GET', `${appUrl}/logs/runtime`, owner.auth)).body.data), /DATABASE_URL is not set/, 'its output is kept')
  t.equal((await viaGateway(app.hosting.gatewayPort() as number, 'crashy.apps.localhost')).status, 502, 'nothing to route to')
  t.same([(await call(app, 'POST', `${appUrl}/deployments/${failed.id}/rollback`, owner.auth)).status], [202], 'its artifact can still be tried again')

  const work = tempDir(t, 'plinth-archives-')
  const archive = (name: string, args: string[]): Buffer => {
    execFileSync('tar', ['-cf', join(work, name), ...args], { cwd: work })
    return readFileSync(join(work, name))
  }
  mkdirSync(join(work, 'tree/sub'), { recursive: true })
  writeFileSync(join(work, 'tree/index.html'), 'hi')
  writeFileSync(join(work, 'outside.txt'), 'secret')
  symlinkSync('/etc/hostname', join(work, 'tree/escape'))
  const bad: Array<[string, Buffer, RegExp]> = [
    ['not a tar', randomBytes(2048), /not a tar/],
    ['a parent path', archive('dotdot.tar', ['-P', 'tree/sub/../../outside.txt']), /outside its tree/],
    ['an absolute path', archive('absolute.tar', ['-P', join(work, 'outside.txt')]), /outside its tree/],
    ['a link out', archive('link.tar', ['-C', join(work, 'tree'), '.']), /points outside/]
  ]
  const site = `${base}/static-apps/${(await call(app, 'POST', `${base}/static-apps`, owner.auth, { name: 'bad-archives' })).body.data.id as string}`
  for (const [name, bytes, reason] of bad) {
    const deployment = await call(app, 'POST', `${site}/deployments`, member.auth, { uploadId: await uploadSource(app, site, member.auth, bytes, 'source.tar') })
    t.match(await deploymentSettled(app, site, owner.auth, deployment.body.data.id), { state: 'build_failed', reason }, name)
  }

  t.equal((await call(app, 'PUT', `${site}/git-source`, owner.auth, { url: 'https://127.0.0.1:1/nothing.git', branch: 'main' })).status, 200)
  t.same([(await call(app, 'POST', `${site}/deployments/from-git`, owner.auth, { ref: 'other' })).body.code], ['APP_HOSTING_GIT_SOURCE_INVALID'], 'an external repository deploys its branch only')
  const unreachable = await call(app, 'POST', `${site}/deployments/from-git`, owner.auth, {})
  t.match(await deploymentSettled(app, site, owner.auth, unreachable.body.data.id), { state: 'build_failed', reason: /^Could not clone https:\/\/127\.0\.0\.1:1\/nothing\.git/ }, 'an external repository that cannot be cloned fails the build, saying why')

  const uploads: Array<[string, Record<string, string>, unknown, number, string]> = [
    ['a zip', owner.auth, { name: 'source.zip', size: 10, sha256: 'a'.repeat(64) }, 400, 'APP_HOSTING_ARCHIVE_INVALID'],
    ['too large', owner.auth, { name: 'source.tar.gz', size: 1024 ** 3, sha256: 'a'.repeat(64) }, 400, 'APP_VALIDATION_FAILED'],
    ['no sha256', owner.auth, { name: 'source.tar.gz', size: 10 }, 400, 'APP_VALIDATION_FAILED'],
    ['a viewer', viewer.auth, { name: 'source.tar.gz', size: 10, sha256: 'a'.repeat(64) }, 403, 'APP_FORBIDDEN']
  ]
  for (const [name, headers, body, status, code] of uploads) {
    const res = await call(app, 'POST', `${appUrl}/source-uploads`, headers, body)
    t.same([res.status, res.body.code], [status, code], name)
  }
  const bytes = packFixture(t, 'node-hello')
  const wrong = await call(app, 'POST', `${appUrl}/source-uploads`, owner.auth, { name: 's.tgz', size: bytes.length, sha256: createHash('sha256').update('other').digest('hex') })
  await app.inject({ method: 'PUT', url: `${appUrl}/source-uploads/${wrong.body.data.id as string}/chunks/0`, headers: { ...owner.auth, 'content-type': 'application/octet-stream' }, payload: bytes })
  t.same([(await call(app, 'POST', `${appUrl}/source-uploads/${wrong.body.data.id as string}/complete`, owner.auth)).body.code], ['APP_UPLOAD_CHECKSUM_MISMATCH'])
  t.same([(await call(app, 'POST', `${appUrl}/deployments`, owner.auth, { uploadId: wrong.body.data.id })).body.code], ['APP_HOSTING_UPLOAD_NOT_COMPLETED'])
  t.same([(await call(app, 'POST', `${appUrl}/deployments`, owner.auth, { uploadId: 'nope' })).body.code], ['APP_UPLOAD_SESSION_NOT_FOUND'])
  t.equal((await call(app, 'GET', `${appUrl}/source-uploads/${wrong.body.data.id as string}`, owner.auth)).body.data.status, 'open')

  const uploadId = await uploadSource(app, appUrl, owner.auth, bytes)
  const building = (await call(app, 'POST', `${appUrl}/deployments`, owner.auth, { uploadId })).body.data.id as string
  const queued = (await call(app, 'POST', `${appUrl}/deployments`, owner.auth, { uploadId })).body.data.id as string
  const canceled = await call(app, 'POST', `${appUrl}/deployments/${queued}/cancel`, member.auth)
  t.match(canceled.body.data, { id: queued, state: 'canceled' }, 'a queued deployment cancels at once')
  t.equal((await deploymentSettled(app, appUrl, owner.auth, building)).state, 'live', 'the one before it goes on')
  t.equal((await call(app, 'GET', `${appUrl}/deployments/${queued}`, owner.auth)).body.data.state, 'canceled', 'and the canceled one never runs')
  t.same([(await call(app, 'POST', `${appUrl}/deployments/${queued}/cancel`, owner.auth)).body.code], ['APP_HOSTING_DEPLOYMENT_FINISHED'])
  t.same([(await call(app, 'GET', `${appUrl}/deployments/nope`, owner.auth)).body.code], ['APP_HOSTING_DEPLOYMENT_NOT_FOUND'])
  t.same((await call(app, 'GET', `${appUrl}/deployments?limit=2`, viewer.auth)).body.data.map((one: { id: string }) => one.id), [queued, building])
})
