import { loadavg } from 'node:os'
import { setTimeout as sleep } from 'node:timers/promises'
import type autocannon from 'autocannon'
import { CONNECTIONS, DURATION, SLICES, WARMUP_SECONDS, helloWorld, line, load, start, summary, type Scenario } from './pairs.js'

/**
 * What the record change feed costs a write (issue 33: under 15%): `POST`
 * create record into a project with one record webhook subscribed, beside
 * the same writes into a project with none, on one server, in alternating
 * slices with the hello-world (which is also the webhook's receiver). The
 * armed slices pay for the outbox entry, the publish and the deliveries the
 * job worker sends meanwhile; what is still queued after a slice drains
 * before the next one starts, so no slice pays for another's deliveries.
 */
// The name BENCH_ONLY matches (bench/run.ts spells it too).
export const RECORD_WEBHOOK_ROW = 'record writes with a record webhook'
const BAR_PERCENT = 15

const hello = await start('./hello.ts')
const server = await start('./record-webhooks-serve.ts', { RECEIVER: hello.address })
const body = JSON.stringify({ title: 'bench', body: 'a note of a few words', views: 1 })
const NAMES = { quiet: 'no webhook', armed: 'one webhook', paused: 'one webhook, paused', fed: 'armed, webhook deleted' }
const writes = (project: keyof typeof NAMES): Scenario => ({ name: `POST create record (${NAMES[project]})`, path: `/api/p/${server.info[project]}/notes`, method: 'POST', body })

/** Waits until the armed project's deliveries are all sent; seconds taken. */
async function drained (): Promise<number> {
  const started = performance.now()
  for (;;) {
    const { queued } = await (await fetch(`${server.address}/bench/backlog`)).json() as { queued: number }
    if (queued === 0) return (performance.now() - started) / 1000
    await sleep(50)
  }
}

try {
  const quiet = writes('quiet')
  const armed = writes('armed')
  const paused = writes('paused')
  const fed = writes('fed')
  await load(hello.address, helloWorld, WARMUP_SECONDS)
  await load(server.address, quiet, WARMUP_SECONDS)
  await load(server.address, armed, WARMUP_SECONDS)
  await load(server.address, paused, WARMUP_SECONDS)
  await load(server.address, fed, WARMUP_SECONDS)
  await drained()
  const slice = Math.max(1, Math.round(DURATION / SLICES))
  const results: Record<'hello' | 'quiet' | 'armed' | 'paused' | 'fed', autocannon.Result[]> = { hello: [], quiet: [], armed: [], paused: [], fed: [] }
  const drains: number[] = []
  for (let i = 0; i < SLICES; i++) {
    results.hello.push(await load(hello.address, helloWorld, slice))
    results.quiet.push(await load(server.address, quiet, slice))
    results.armed.push(await load(server.address, armed, slice))
    drains.push(await drained())
    results.paused.push(await load(server.address, paused, slice))
    results.fed.push(await load(server.address, fed, slice))
  }
  const ceiling = summary(helloWorld.name, results.hello).rps
  const none = summary(quiet.name, results.quiet)
  const one = summary(armed.name, results.armed)
  const outbox = summary(paused.name, results.paused)
  const feedOnly = summary(fed.name, results.fed)
  for (const row of [none, one, outbox, feedOnly]) console.log(line(row, ceiling, null, undefined))
  const cost = 100 * (1 - one.rps / none.rps)
  const armedWrites = results.armed.reduce((sum, result) => sum + result.requests.total, 0)
  console.log(`${RECORD_WEBHOOK_ROW.padEnd(34)} ${(100 * one.rps / none.rps).toFixed(1).padStart(7)}% of the writes without one: one webhook costs ${cost.toFixed(1)}% ` +
    `(${armedWrites} events; their deliveries drained ${drains.map((seconds) => seconds.toFixed(1)).join(', ')} s after each slice; ${CONNECTIONS} connections)` +
    `  [bar: < ${BAR_PERCENT}%: ${cost < BAR_PERCENT ? 'met' : 'MISSED'}]; with the webhook paused (the outbox alone: events kept, nothing sent) ${(100 * (1 - outbox.rps / none.rps)).toFixed(1)}%; armed with no webhook left (no entry kept) costs ${(100 * (1 - feedOnly.rps / none.rps)).toFixed(1)}%  load average ${loadavg().map((value) => value.toFixed(2)).join(' ')}`)
} finally {
  server.child.kill('SIGTERM')
  hello.child.kill()
}
