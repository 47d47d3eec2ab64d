import t from 'tap'
import { execFileSync } from 'node:child_process'
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { ManualClock } from '../../../services/platform/clock.js'
import { Traffic } from '../../../services/hosting/traffic.js'
import { HostRoutes } from '../../../services/hosting/route-table.js'
import { masker, parseEnv } from '../../../services/hosting/secrets.js'
import { checkExternalUrl, checkSubdirectory, narrowed, SourceError, unpackTar } from '../../../services/hosting/sources.js'
import { tempDir, tempStore } from '../../helper.js'

t.test('traffic: counts and percentiles per app and instance, usage rows by hour', async (t) => {
  const clock = new ManualClock(Date.UTC(2026, 0, 1, 10, 30))
  const traffic = new Traffic(await tempStore(t), { clock, projectOf: (appId) => appId === 'a1' ? 'p1' : null })
  await traffic.init()
  // The first 952 are slow and fall out of the latency window; the counts keep them.
  for (let i = 1; i <= 3000; i++) traffic.record({ appId: 'a1', instanceId: i % 2 === 0 ? 'i1' : null, status: i % 100 === 0 ? 503 : i % 10 === 0 ? 404 : 200, durationMs: i <= 952 ? 5000 : i % 100, bytesOut: 10 })
  traffic.addBuildSeconds({ _id: 'a1', projectId: 'p1' }, 2.5)
  const metrics = await traffic.metrics('a1', [{ id: 'i1', stats: { cpuSeconds: 1.5, memoryBytes: 1024 } }, { id: 'i2', stats: null }])
  const recent = Array.from({ length: 2048 }, (_, k) => (k + 953) % 100).sort((a, b) => a - b)
  const rank = (p: number) => recent[Math.ceil(p * recent.length) - 1]
  t.match(metrics.app, { requests: 3000, status5xx: 30, status4xx: 270, latencyMs: { p50: rank(0.5), p95: rank(0.95), p99: rank(0.99) } })
  t.match(metrics.instances, [{ instanceId: 'i1', requests: 1500, cpuSeconds: 1.5, memoryBytes: 1024 }, { instanceId: 'i2', requests: 0, cpuSeconds: null, memoryBytes: null, latencyMs: { p50: 0 } }])
  clock.advance(60_000)
  await traffic.flush([{ appId: 'a1', projectId: 'p1', startedAt: new Date(clock.nowMs() - 30_000) }])
  clock.advance(60 * 60_000)
  traffic.record({ appId: 'a1', instanceId: null, status: 200, durationMs: 1, bytesOut: 5 })
  await traffic.flush([{ appId: 'a1', projectId: 'p1', startedAt: null }])
  const rows = await traffic.usageRows('a1', 2)
  t.same(rows, [
    { hour: '2026-01-01T10:00:00.000Z', instanceSeconds: 30, buildSeconds: 2.5, requests: 3000, egressBytes: 30000 },
    { hour: '2026-01-01T11:00:00.000Z', instanceSeconds: 0, buildSeconds: 0, requests: 1, egressBytes: 5 }
  ])
  t.same(await traffic.usageRows('a1', 1), [rows[1]], 'hours bound the rows')
  await traffic.deleteForApp('a1')
  t.same(await traffic.usageRows('a1', 24), [])
})

t.test('the route table replaces an app\'s entry whole and forgets hosts it no longer has', async (t) => {
  const routes = new HostRoutes()
  const route = { kind: 'app' as const, appId: 'a1', projectId: 'p1', suspended: false, upstreams: [] }
  routes.set(route, ['A.example', 'b.example'])
  t.equal(routes.resolve('a.example'), route)
  routes.set({ ...route, suspended: true }, ['b.example'])
  t.equal(routes.resolve('a.example'), null, 'a host dropped from the list goes')
  t.equal(routes.routeOf('a1')?.suspended, true)
  t.same(routes.hosts('a1'), ['b.example'])
  routes.remove('a1')
  t.equal(routes.resolve('b.example'), null)
  t.equal(routes.routeOf('a1'), null)
  t.same(routes.hosts('a1'), [])
})

t.test('.env text, masks and source checks', async (t) => {
  t.same(parseEnv('A=1\r\nexport B = two\n'), [['A', '1'], ['B', 'two']])
  const mask = masker(['ab', 'secret', 'secret-longer', ''])
  t.equal(mask('ab secret secret-longer'), 'ab ******** ********', 'short values stay, the longest is masked whole')
  t.equal(masker([])('as is'), 'as is')
  t.equal(checkSubdirectory(undefined), '')
  t.equal(checkSubdirectory('/a/b/'), 'a/b')
  for (const bad of ['a//b', './a', 'a/..', 'a\\b']) t.throws(() => checkSubdirectory(bad), { code: 'APP_HOSTING_SUBDIRECTORY_INVALID' }, bad)
  t.throws(() => checkExternalUrl('not a url'), { code: 'APP_HOSTING_GIT_SOURCE_INVALID' })
  t.equal(checkExternalUrl('https://example.com/a.git'), 'https://example.com/a.git')
  t.equal(checkExternalUrl('https://Example.COM../a.git'), 'https://example.com/a.git', 'the host as git will connect to it')
  t.equal(checkExternalUrl('https://0x7f.1:8443/a.git'), 'https://127.0.0.1:8443/a.git')
  t.throws(() => checkExternalUrl('https://./a.git'), { code: 'APP_HOSTING_GIT_SOURCE_INVALID', message: /has no host/ })

  const work = tempDir(t)
  mkdirSync(join(work, 'src/deep/er'), { recursive: true })
  writeFileSync(join(work, 'src/deep/er/file.txt'), 'x')
  symlinkSync('deep/er/file.txt', join(work, 'src/inside'))
  execFileSync('tar', ['-czf', join(work, 'ok.tgz'), '-C', join(work, 'src'), '.'])
  await unpackTar(join(work, 'ok.tgz'), join(work, 'out'))
  t.equal(readFileSync(join(work, 'out/inside'), 'utf8'), 'x', 'links inside the tree are kept')
  t.equal(await narrowed(join(work, 'out'), 'deep'), join(work, 'out/deep'))
  await t.rejects(narrowed(join(work, 'out'), 'missing'), SourceError)
  await t.rejects(narrowed(join(work, 'out'), 'inside'), SourceError, 'a file is no folder')
  mkdirSync(join(work, 'fifo-src'))
  execFileSync('mkfifo', [join(work, 'fifo-src/pipe')])
  execFileSync('tar', ['-cf', join(work, 'fifo.tar'), '-C', join(work, 'fifo-src'), '.'])
  await t.rejects(unpackTar(join(work, 'fifo.tar'), join(work, 'fifo-out')), { message: /other than files/ })
})
