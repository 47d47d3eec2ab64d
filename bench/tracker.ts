import { measurePair, line, ONLY, start, type Scenario } from './pairs.js'
import { LIST_FILTER } from './tracker-filter.js'

/**
 * The tracker's rows, each beside the hello-world in the same run: a list of
 * 50 items by a three-condition filter and a get by key on a project of
 * 100,000 items, and a create (into a project of its own, in the same
 * store); then the same list on projects of 10,000,
 * 100,000 and 1,000,000 items, to see whether its time grows with the
 * project (it should not: the filter is served by an index); and a comment on
 * an item with 50 subscribers, which notifies each of them.
 */
const FILTER = LIST_FILTER
const SIZES = (process.env.BENCH_TRACKER_SIZES ?? '10000,100000,1000000').split(',').map(Number)
const MAIN = SIZES.includes(100_000) ? 100_000 : SIZES[0]

const hello = await start('./hello.ts')
const tracker = await start('./tracker-serve.ts', { BENCH_TRACKER_SIZES: SIZES.join(',') })
const { info } = tracker
const auth = { authorization: `Bearer ${info.accessToken}` }
const base = `/api/projects/${info.projectId}/tracker`
const list = (size: number): string => `${base}/projects/${info[`lp${size}`]}/work-items?limit=50&filter=${FILTER}`

// Lists last: a slow one would leave requests queued behind it when its slice ends. Eight connections keep a server
// of one event loop busy; more only queue behind a slow list, to be drained before the next row.
const scenarios: Scenario[] = [
  { name: 'tracker get by key', path: `${base}/browse/${info[`key${MAIN}`]}`, headers: auth, bar: { percent: 35 } },
  // Into a project of its own (bench/tracker-serve.ts), so the lists below measure the seeded items only.
  { name: 'tracker create work item', path: `${base}/projects/${info.lpCreate}/work-items`, method: 'POST', headers: auth, body: JSON.stringify({ title: 'bench', priority: 'high' }), bar: { percent: 20 } },
  // Each comment is written with its effects: activity, subscriptions and one notification for each of 50 subscribers.
  { name: 'tracker notification fan-out, 50 subscribers', path: info.fanOutComments, method: 'POST', headers: auth, body: JSON.stringify({ body: 'bench comment' }) },
  { name: `tracker list 50, 3 conditions (${MAIN / 1000}k)`, path: list(MAIN), headers: auth, connections: 8, bar: { percent: 25 } }
]

/** Waits until the server answers /healthz promptly again: requests a slow scenario left queued are done. */
async function drained (): Promise<void> {
  for (let i = 0; i < 600; i++) {
    const started = performance.now()
    await (await fetch(`${tracker.address}/healthz`)).arrayBuffer()
    if (performance.now() - started < 20) return
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}
const growth: Scenario[] = SIZES.map((size) => ({ name: `tracker list growth (${size / 1000}k items)`, path: list(size), headers: auth, connections: 8 }))

try {
  for (const scenario of scenarios.filter((s) => ONLY.test(s.name))) {
    const { measured, ceiling, postCeiling, serverBusy } = await measurePair(hello, tracker, scenario)
    console.log(line(measured, ceiling.rps, postCeiling?.rps ?? null, scenario.bar, serverBusy))
    await drained()
  }
  const rates: Array<[number, number]> = []
  for (const [index, scenario] of growth.entries()) {
    if (!ONLY.test(scenario.name)) continue
    const { measured, ceiling, serverBusy } = await measurePair(hello, tracker, scenario)
    console.log(line(measured, ceiling.rps, null, undefined, serverBusy))
    rates.push([SIZES[index], measured.rps])
    await drained()
  }
  if (rates.length > 1) {
    const [smallest, rps] = rates[0]
    console.log(`${'tracker list growth'.padEnd(34)} ${rates.map(([size, rate]) => `${size / 1000}k: ${(100 * rate / rps).toFixed(0)}%`).join(', ')} of the ${smallest / 1000}k rate (flat is 100%)`)
  }
} finally {
  tracker.child.kill('SIGTERM')
  hello.child.kill('SIGTERM')
}
