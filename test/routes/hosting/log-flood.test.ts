import t from 'tap'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { setTimeout as delay } from 'node:timers/promises'
import { buildTestApp, call, orgWithRoles, type TestApp } from '../../helper.js'
import { deploymentSettled, packFixture, uploadSource, viaGateway, waitFor } from './fixtures.js'

const FLOOD_LINES = 400_000
const LINES_PER_SECOND = 100
/** How far the server's heap may grow while it takes in the flood. Keeping every line costs well over 200 MiB. */
const HEAP_BOUND_BYTES = 32 * 1024 * 1024

setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void
const heapUsed = (): number => { gc(); return process.memoryUsage().heapUsed }

async function runtimeLines (app: TestApp, appUrl: string, auth: Record<string, string>): Promise<string[]> {
  const lines: string[] = []
  for (let after = 0; ;) {
    const page = (await call(app, 'GET', `${appUrl}/logs/runtime?after=${after}&limit=1000`, auth)).body.data as Array<{ seq: number, line: string }>
    lines.push(...page.map((line) => line.line))
    if (page.length < 1000) return lines
    after = page[page.length - 1].seq
  }
}

t.test('an app flooding stdout: the lines kept are bounded, the rest counted in markers, and the server\'s heap stays flat', async (t) => {
  const app = await buildTestApp(t, { env: { GATEWAY_PORT: '0', HOSTING_LOG_LINES_PER_SECOND: String(LINES_PER_SECOND) } })
  const { owner, orgId } = await orgWithRoles(app)
  const projectId = (await call(app, 'POST', '/api/projects', owner.auth, { orgId, name: 'Loud' })).body.data.id as string
  const appUrl = `/api/projects/${projectId}/backend/apps/${(await call(app, 'POST', `/api/projects/${projectId}/backend/apps`, owner.auth, { name: 'flood', healthCheckPath: '/healthz' })).body.data.id as string}`
  const port = app.hosting.gatewayPort() as number
  const uploadId = await uploadSource(app, appUrl, owner.auth, packFixture(t, 'log-flood'))
  // Every route the measurement uses has answered once (their schemas compile on first use).
  await runtimeLines(app, appUrl, owner.auth)
  await call(app, 'GET', `${appUrl}/deployments`, owner.auth)

  const before = heapUsed()
  let peak = before
  // Sampled while the flood comes in: past the bound the test stops at once, saying by how much.
  const sample = (): void => {
    peak = Math.max(peak, heapUsed())
    if (peak - before >= HEAP_BOUND_BYTES) throw new Error(`the heap grew by ${((peak - before) / 1024 / 1024).toFixed(1)} MiB while the flood came in`)
  }
  const startedMs = Date.now()
  const deployment = await call(app, 'POST', `${appUrl}/deployments`, owner.auth, { uploadId })
  t.equal((await deploymentSettled(app, appUrl, owner.auth, deployment.body.data.id)).state, 'live')
  await waitFor('the flood written', async () => { sample(); return (await viaGateway(port, 'flood.apps.localhost', '/flooded')).body }, (body) => body === 'true')

  // Each line the app wrote is kept or counted as dropped: counts are written before a later line kept, so the test
  // pings (each ping logs a numbered line) until the lines up to the newest ping kept are all accounted for.
  let pings = 0
  let kept = { flood: 0, pings: 0, newestPing: 0, dropped: 0, markers: 0 }
  await waitFor('every line kept or counted', async () => {
    sample()
    if ((await viaGateway(port, 'flood.apps.localhost', '/ping')).body !== String(++pings)) t.fail('the ping was not answered')
    await delay(300)
    kept = { flood: 0, pings: 0, newestPing: 0, dropped: 0, markers: 0 }
    for (const line of await runtimeLines(app, appUrl, owner.auth)) {
      const marker = /^(\d+) lines? dropped \(/.exec(line)
      const ping = /^ping (\d+)$/.exec(line)
      if (marker !== null) {
        kept.dropped += Number(marker[1])
        kept.markers++
      } else if (ping !== null) {
        kept.pings++
        kept.newestPing = Number(ping[1])
      } else if (line.startsWith('flood line ')) {
        kept.flood++
      }
    }
    return kept
  }, (kept) => kept.flood + kept.pings + kept.dropped === FLOOD_LINES + kept.newestPing)
  const elapsedSeconds = Math.ceil((Date.now() - startedMs) / 1000)
  peak = Math.max(peak, heapUsed())

  t.ok(kept.markers >= 1, `the drops are counted in ${kept.markers} marker line(s)`)
  t.ok(kept.flood + kept.pings <= LINES_PER_SECOND * (elapsedSeconds + 1), `${kept.flood + kept.pings} lines kept in ${elapsedSeconds} s, at most ${LINES_PER_SECOND} a second`)
  t.ok(kept.dropped >= FLOOD_LINES - LINES_PER_SECOND * (elapsedSeconds + 1), `${kept.dropped} lines dropped`)
  t.ok(peak - before < HEAP_BOUND_BYTES, `the heap grew by ${((peak - before) / 1024 / 1024).toFixed(1)} MiB at most (bound ${HEAP_BOUND_BYTES / 1024 / 1024} MiB)`)
})
