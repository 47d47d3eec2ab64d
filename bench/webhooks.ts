import { mkdtempSync, rmSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import autocannon from 'autocannon'
import { buildApp } from '../app.js'
import { loadConfig } from '../services/config.js'
import { WEBHOOK_DELIVER_JOB } from '../services/webhooks/index.js'
import { DURATION, SLICES, WARMUP_SECONDS, start } from './pairs.js'

/**
 * Webhook deliveries a second to a loopback receiver, end to end: events
 * published through the engine (kept, fanned out, a keyed job each), then
 * claimed by the node's job worker, signed, POSTed through the address
 * guard to the receiver (the hello-world server), logged and settled. The
 * receiver is the hello-world of the same run, whose own rate (autocannon,
 * alternating slices) is printed beside it, with the load average, since
 * the machine is shared.
 */
// The name BENCH_ONLY matches (bench/run.ts spells it too).
const WEBHOOK_ROW = 'webhooks: deliveries to a loopback receiver'
const EVENTS = Number(process.env.BENCH_WEBHOOK_EVENTS ?? 2000)
const BATCH = 100
const POLL_MS = 20

const hello = await start('./hello.ts')
const dir = mkdtempSync(join(tmpdir(), 'plinth-bench-webhooks-'))
const config = loadConfig({
  DATA_DIR: dir,
  LOG_LEVEL: 'silent',
  GATEWAY_PORT: 'off',
  HOSTING_ENABLED: 'false',
  WEBHOOK_ALLOWED_HOSTS: '127.0.0.1',
  ...(process.env.JOB_WORKER_SLOTS === undefined ? {} : { JOB_WORKER_SLOTS: process.env.JOB_WORKER_SLOTS })
})
const app = await buildApp(config)
app.webhooks.registerSource({ name: 'bench', eventTypes: ['bench.changed'], sample: (_projectId, type) => ({ key: 'sample', type, occurredAt: new Date(), actor: null, data: {} }) })
await app.ready()
const owner = { projectId: 'bench', source: 'bench' }
await app.webhooks.create(owner, { url: `${hello.address}/`, events: ['*'] }, null)

let published = 0
/** Publishes `count` changes and waits until every delivery is delivered: seconds taken, and of them the publishing. */
async function round (count: number): Promise<{ seconds: number, publishSeconds: number }> {
  const deliveries = app.webhooks.publisher.deliveries
  const target = (await deliveries.countDocuments({ status: 'delivered' })) + count
  const started = performance.now()
  for (let done = 0; done < count; done += BATCH) {
    const events = Array.from({ length: Math.min(BATCH, count - done) }, () => {
      published++
      return { key: `change-${published}`, type: 'bench.changed', occurredAt: new Date(), actor: { type: 'user', id: 'u1' }, data: { id: `thing-${published}`, n: published }, changes: { n: { from: published - 1, to: published } } }
    })
    await app.webhooks.publish('bench', owner.projectId, events)
  }
  const publishSeconds = (performance.now() - started) / 1000
  // Asked through the claim index, so the waiting costs the engine next to nothing.
  while (await app.jobs.jobs.findOne({ status: { $in: ['queued', 'running'] }, type: WEBHOOK_DELIVER_JOB }, { projection: { _id: 1 } }) !== null) await sleep(POLL_MS)
  const seconds = (performance.now() - started) / 1000
  if (await deliveries.countDocuments({ status: 'delivered' }) !== target) throw new Error('a delivery to the loopback receiver did not succeed')
  return { seconds, publishSeconds }
}

async function helloRate (seconds: number): Promise<number> {
  const result = await autocannon({ url: `${hello.address}/`, connections: 32, duration: seconds })
  return result.requests.total / result.duration
}

try {
  await helloRate(WARMUP_SECONDS)
  await round(Math.min(200, EVENTS))
  const rates: number[] = []
  const publishRates: number[] = []
  const helloRates: number[] = []
  const slice = Math.max(1, Math.round(DURATION / SLICES))
  for (let i = 0; i < SLICES; i++) {
    helloRates.push(await helloRate(slice))
    const { seconds, publishSeconds } = await round(EVENTS)
    rates.push(EVENTS / seconds)
    publishRates.push(EVENTS / publishSeconds)
  }
  const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]
  const rate = median(rates)
  const ceiling = median(helloRates)
  console.log(`${WEBHOOK_ROW.padEnd(34)} ${rate.toFixed(0).padStart(8)} deliveries/s  median of ${rates.map((value) => value.toFixed(0)).join(', ')} (${EVENTS} events each; publishing alone ${median(publishRates).toFixed(0)} events/s; ` +
    `JOB_WORKER_SLOTS=${config.jobs.slots})  ${(100 * rate / ceiling).toFixed(1)}% of hello-world (${ceiling.toFixed(0)} req/s), load average ${loadavg().map((value) => value.toFixed(2)).join(' ')}`)
} finally {
  await app.close()
  hello.child.kill()
  rmSync(dir, { recursive: true, force: true })
}
