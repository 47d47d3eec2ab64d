import t from 'tap'
import { request } from 'node:http'
import { buildApp } from '../../../app.js'
import { loadConfig } from '../../../services/config.js'
import { buildTestApp, call, orgWithRoles, stopHostedInstances, tempDir } from '../../helper.js'
import { deploymentSettled, packFixture, uploadSource, viaGateway, waitFor } from './fixtures.js'

t.test('secrets: upserted, imported from .env, listed by name and version, deleted', async (t) => {
  const app = await buildTestApp(t)
  const { owner, member, viewer, orgId } = await orgWithRoles(app)
  const projectId = (await call(app, 'POST', '/api/projects', owner.auth, { orgId, name: 'Keys' })).body.data.id as string
  const appUrl = `/api/projects/${projectId}/backend/apps/${(await call(app, 'POST', `/api/projects/${projectId}/backend/apps`, owner.auth, { name: 'keys' })).body.data.id as string}`

  const env = '# comment\nexport API_KEY=abc123def\nQUOTED="two words \\"here\\""\nSINGLE=\'as is\\n\'\nBARE=value # trailing\n\n'
  const imported = await call(app, 'POST', `${appUrl}/secrets/import`, owner.auth, { env })
  t.same(imported.body.data.map((secret: { name: string, version: number }) => [secret.name, secret.version]), [['API_KEY', 1], ['QUOTED', 1], ['SINGLE', 1], ['BARE', 1]])
  t.same(await app.hosting.secrets.environment((await app.hosting.apps.get(projectId, appUrl.split('/').pop() as string, 'container'))._id), { API_KEY: 'abc123def', QUOTED: 'two words "here"', SINGLE: 'as is\\n', BARE: 'value' }, 'values read as a shell would')
  t.equal((await call(app, 'PUT', `${appUrl}/secrets/API_KEY`, owner.auth, { value: 'rotated-key' })).body.data.version, 2, 'each change is a new version')
  const listed = await call(app, 'GET', `${appUrl}/secrets`, viewer.auth)
  t.same(listed.body.data.map((secret: { name: string, version: number }) => [secret.name, secret.version]), [['API_KEY', 2], ['BARE', 1], ['QUOTED', 1], ['SINGLE', 1]])
  t.notOk(/rotated-key|abc123def|two words/.test(JSON.stringify(listed.body)), 'no value is ever returned')
  const stored = JSON.stringify(await app.store.collection('hosting_secrets').find({}).toArray())
  t.notOk(stored.includes('rotated-key'), 'nor stored in the clear')

  const refusals: Array<[string, 'PUT' | 'POST', string, Record<string, string>, unknown, number, string]> = [
    ['a viewer', 'PUT', '/secrets/X', viewer.auth, { value: 'v' }, 403, 'APP_FORBIDDEN'],
    ['a member', 'PUT', '/secrets/X', member.auth, { value: 'v' }, 403, 'APP_FORBIDDEN'],
    ['a bad name', 'PUT', '/secrets/1X', owner.auth, { value: 'v' }, 400, 'APP_VALIDATION_FAILED'],
    ['a platform variable', 'PUT', '/secrets/PLINTH_INSTANCE_ID', owner.auth, { value: 'v' }, 400, 'APP_HOSTING_SECRET_INVALID'],
    ['a line that is no assignment', 'POST', '/secrets/import', owner.auth, { env: 'A=1\nnot an assignment\n' }, 400, 'APP_HOSTING_ENV_INVALID'],
    ['an open quote', 'POST', '/secrets/import', owner.auth, { env: 'A="open\n' }, 400, 'APP_HOSTING_ENV_INVALID'],
    ['an open single quote', 'POST', '/secrets/import', owner.auth, { env: 'A=\'open\n' }, 400, 'APP_HOSTING_ENV_INVALID'],
    ['nothing set', 'POST', '/secrets/import', owner.auth, { env: '# only a comment\n' }, 400, 'APP_HOSTING_ENV_INVALID'],
    ['a reserved name in a file', 'POST', '/secrets/import', owner.auth, { env: 'PORT=1\n' }, 400, 'APP_HOSTING_SECRET_INVALID']
  ]
  for (const [name, method, path, headers, body, status, code] of refusals) {
    const res = await call(app, method, `${appUrl}${path}`, headers, body)
    t.same([res.status, res.body.code], [status, code], name)
  }
  t.same((await call(app, 'DELETE', `${appUrl}/secrets/BARE`, owner.auth)).body.data, { id: 'BARE', deleted: true })
  t.same([(await call(app, 'DELETE', `${appUrl}/secrets/BARE`, owner.auth)).body.code], ['APP_HOSTING_SECRET_NOT_FOUND'])
  const many = Array.from({ length: 100 }, (_, i) => `S${i}=v`).join('\n')
  t.same([(await call(app, 'POST', `${appUrl}/secrets/import`, owner.auth, { env: many })).body.code], ['APP_HOSTING_SECRETS_LIMIT'])
  const timeline = (await call(app, 'GET', `${appUrl}/timeline`, owner.auth)).body.data.map((event: { message: string }) => event.message).join('\n')
  t.match(timeline, /Secret API_KEY set \(version 2\)/)
  t.notOk(timeline.includes('rotated-key'), 'the timeline names keys only')
})

/** Server-Sent Events from a listening server, until `until` holds for what arrived. */
async function followEvents (url: string, headers: Record<string, string>, until: (text: string) => boolean): Promise<{ type: string | undefined, text: string }> {
  return await new Promise((resolve, reject) => {
    const req = request(url, { headers }, (res) => {
      let text = ''
      res.on('data', (chunk: Buffer) => {
        text += chunk.toString()
        if (until(text)) { resolve({ type: res.headers['content-type'], text }); req.destroy() }
      })
      res.on('error', () => {})
    })
    req.on('error', reject)
    req.end()
  })
}

t.test('logs follow as Server-Sent Events; usage and metrics count; a restarted server adopts its instances', async (t) => {
  const dataDir = tempDir(t)
  const config = loadConfig({ LOG_LEVEL: 'silent', DATA_DIR: dataDir, GATEWAY_PORT: '0' })
  const app = await buildApp(config)
  await app.listen({ port: 0, host: '127.0.0.1' })
  let closed = false
  t.teardown(async () => {
    if (closed) return
    await stopHostedInstances(app)
    await app.close()
  })
  const { owner, outsider, orgId } = await orgWithRoles(app)
  const projectId = (await call(app, 'POST', '/api/projects', owner.auth, { orgId, name: 'Ops' })).body.data.id as string
  const appId = (await call(app, 'POST', `/api/projects/${projectId}/backend/apps`, owner.auth, { name: 'ops', healthCheckPath: '/healthz' })).body.data.id as string
  const appUrl = `/api/projects/${projectId}/backend/apps/${appId}`
  await call(app, 'PUT', `${appUrl}/secrets/SECRET_TOKEN`, owner.auth, { value: 'followed-secret-value' })
  const address = app.server.address() as { port: number }

  t.same([(await call(app, 'GET', `${appUrl}/logs/build?follow=true`, outsider.auth)).status], [404], 'an outsider follows nothing')
  const following = followEvents(`http://127.0.0.1:${address.port}${appUrl}/logs/runtime?follow=true`, owner.auth, (text) => text.includes('listening on'))
  const deployment = (await call(app, 'POST', `${appUrl}/deployments`, owner.auth, { uploadId: await uploadSource(app, appUrl, owner.auth, packFixture(t, 'node-hello')) })).body.data.id as string
  t.equal((await deploymentSettled(app, appUrl, owner.auth, deployment)).state, 'live')
  const events = await following
  t.match(events.type, /^text\/event-stream/)
  t.match(events.text, /event: log\ndata: \{"seq":\d+/)
  t.match(events.text, /SECRET_TOKEN=\*{8}/, 'followed lines are masked too')
  t.notOk(events.text.includes('followed-secret-value'))
  const since = (await call(app, 'GET', `${appUrl}/logs/build?deploymentId=${deployment}&limit=2`, owner.auth)).body.data
  t.equal(since.length, 2)
  const after = (await call(app, 'GET', `${appUrl}/logs/build?deploymentId=${deployment}&after=${since[0].seq as number}`, owner.auth)).body.data
  t.equal(after[0].seq, since[1].seq, 'after resumes from a sequence number')

  const port = app.hosting.gatewayPort() as number
  const before = await viaGateway(port, 'ops.apps.localhost')
  t.equal(before.status, 200)
  await viaGateway(port, 'ops.apps.localhost', '/missing-page')
  const metrics = (await call(app, 'GET', `${appUrl}/metrics`, owner.auth)).body.data
  t.match(metrics, { app: { requests: 2, latencyMs: { p50: Number } }, instances: [{ requests: 2 }] })
  t.ok(metrics.instances[0].memoryBytes === null || metrics.instances[0].memoryBytes > 0, 'memory as the driver reports it')
  await app.hosting.traffic.flush(await app.hosting.releases.running())
  const usage = (await call(app, 'GET', `${appUrl}/usage`, owner.auth)).body.data
  t.match(usage, [{ requests: 2, egressBytes: Number, buildSeconds: Number, instanceSeconds: Number }])
  t.ok(usage[0].buildSeconds > 0 && usage[0].egressBytes > 0, 'build time and bytes out are counted')

  await app.close()
  closed = true
  const again = await buildApp(config)
  await again.ready()
  t.teardown(async () => {
    await stopHostedInstances(again)
    await again.close()
  })
  const newPort = again.hosting.gatewayPort() as number
  const adopted = await viaGateway(newPort, 'ops.apps.localhost')
  t.same([adopted.status, adopted.body], [200, before.body], 'the same instance answers after the restart, adopted rather than restarted')
  t.equal((await call(again, 'DELETE', appUrl, owner.auth)).status, 200)
  await waitFor('the gateway to forget the app', async () => (await viaGateway(newPort, 'ops.apps.localhost')).status, (status) => status === 404)
})
