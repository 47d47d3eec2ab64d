import t from 'tap'
import { join } from 'node:path'
import type { AddressInfo } from 'node:net'
import { buildTestApp } from '../helper.js'
import { createAdmin, PlinthError } from '../../sdk/admin/index.js'
import { deployFolder, type DeployProgress } from '../../sdk/node/index.js'
import { FIXTURES, viaGateway, waitFor } from '../routes/hosting/fixtures.js'

// Hosting through the admin SDK as its guide shows it: a folder deployed with progress, its build log followed live.
t.test('deployFolder with a progress callback, then the build log followed until the deployment is live', async (t) => {
  const app = await buildTestApp(t, { env: { GATEWAY_PORT: '0' } })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const baseUrl = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
  const admin = createAdmin({ baseUrl })
  await admin.auth.register({ email: 'ada@example.com', password: 'correct horse battery', name: 'Ada' })
  await admin.auth.login({ email: 'ada@example.com', password: 'correct horse battery' })
  const org = await admin.organizations.create({ name: 'Engines' })
  const project = await admin.projects.create({ orgId: org.id, name: 'Site' })
  const site = await admin.hosting.createApp(project.id, { name: 'hello' })

  // Followed before the deployment exists: the stream carries every build line from the first on.
  const stop = new AbortController()
  t.teardown(() => { stop.abort() })
  const lines: string[] = []
  const following = (async () => {
    for await (const line of admin.hosting.followLogs(project.id, site.id, 'build', { signal: stop.signal })) {
      lines.push((line.data as { line: string }).line)
      t.type(line.seq, 'number', 'each line carries its sequence number')
      if (lines.includes('build finished')) return
    }
  })()

  const steps: DeployProgress[] = []
  const deployment = await deployFolder(admin, { projectId: project.id, appId: site.id, folder: join(FIXTURES, 'node-hello'), onProgress: (step) => steps.push(step) })
  t.equal(steps[0].phase, 'pack', 'packed first')
  const uploads = steps.filter((step) => step.phase === 'upload')
  t.ok(uploads.length >= 1, 'then each acknowledged chunk')
  const last = uploads.at(-1)
  t.ok(last !== undefined && last.sentBytes === last.totalBytes && last.totalBytes > 0, 'the last chunk completes the archive')
  t.same(steps.at(-1), { phase: 'queued', deploymentId: deployment.id }, 'then the deployment queued')

  await following
  t.ok(lines.includes('build finished'), 'the build\'s own output arrived through the stream')
  const settled = await waitFor('the deployment', async () => await admin.hosting.deployment(project.id, site.id, deployment.id), (d) => !['queued', 'building', 'releasing'].includes(d.state))
  t.equal(settled.state, 'live')
  const hostname = (await admin.hosting.app(project.id, site.id)).hostname
  t.equal((await viaGateway(app.hosting.gatewayPort() as number, hostname)).status, 200, 'the deployed app answers through the gateway')

  // A page of the same log, after the live stream: the same lines, oldest first.
  const page = await admin.hosting.logs(project.id, site.id, 'build', { deploymentId: deployment.id })
  t.ok(page.some((line) => line.line === 'build finished'), 'the JSON page has them too')

  // Refusals are PlinthErrors, the stream's too.
  const missing = admin.hosting.followLogs(project.id, 'no-such-app', 'build')
  t.match(await missing.next().catch((error: unknown) => error), { name: 'PlinthError', status: 404 }, 'following an unknown app is refused')
  const wrong = await deployFolder(admin, { projectId: project.id, appId: site.id, folder: join(FIXTURES, 'no-such-folder') }).catch((error: unknown) => error)
  t.ok(wrong instanceof Error && !(wrong instanceof PlinthError), 'a folder tar cannot read fails before anything is sent')
})
