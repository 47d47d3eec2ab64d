import { once } from 'node:events'
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { randomBytes } from 'node:crypto'
import type { Test } from 'tap'
import { ManualClock } from '../../../services/platform/clock.js'
import { Cursors } from '../../../services/collections/query.js'
import { SecretBox } from '../../../services/platform/crypto.js'
import { commonErrors } from '../../../services/platform/errors.js'
import { createIdGenerator } from '../../../services/platform/ids.js'
import type { ResolveAll } from '../../../services/outbound/internal-addresses.js'
import type { JobQueue } from '../../../services/jobs/queue.js'
import type { Store } from '../../../services/store/types.js'
import { parseWebhooksConfig } from '../../../services/webhooks/config.js'
import { buildWebhooks, WEBHOOK_DELIVER_JOB, type Webhooks, type WebhookEventInput, type WebhookSource } from '../../../services/webhooks/index.js'
import { openTestJobQueue } from '../../helper.js'

/** What a receiver got: the raw body as sent, so signatures are checked over exactly those bytes. */
export interface Received { method: string, url: string, headers: IncomingHttpHeaders, rawBody: string, body: { id: string, type: string, data: Record<string, unknown>, [key: string]: unknown } }
export interface Answer { status: number, headers?: Record<string, string>, body?: string | Buffer }

/**
 * A real receiver on loopback (port 0): it answers from `script` in order,
 * then with `fallback`, and keeps every request it got.
 */
export async function receiver (t: Test, script: Answer[] = [], fallback: Answer = { status: 200, body: 'ok' }): Promise<{ url: string, port: number, received: Received[], server: Server }> {
  const received: Received[] = []
  const server = createServer((request, response) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      const rawBody = Buffer.concat(chunks).toString('utf8')
      received.push({ method: request.method ?? '', url: request.url ?? '', headers: request.headers, rawBody, body: rawBody === '' ? { id: '', type: '', data: {} } : JSON.parse(rawBody) })
      const answer = script.shift() ?? fallback
      response.writeHead(answer.status, answer.headers)
      response.end(answer.body)
    })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(async () => { server.closeAllConnections(); server.close(); await once(server, 'close').catch(() => {}) })
  const { port } = server.address() as AddressInfo
  return { url: `http://127.0.0.1:${port}/hook`, port, received, server }
}

/** The test family: things with a colour; a filter is `{ color }`. */
export const THING_TYPES = ['thing.created', 'thing.updated', 'thing.deleted'] as const

export function thingSource (overrides: Partial<WebhookSource> = {}): WebhookSource {
  return {
    name: 'things',
    eventTypes: THING_TYPES,
    checkFilter: (_projectId, filter, path) => {
      const color = (filter as { color?: unknown }).color
      if (typeof color !== 'string') throw commonErrors.validationFailed({ fields: [{ path: `${path}.color`, message: 'must be a string' }] })
      return { color }
    },
    matches: (subscription, event) => (event.matchOn ?? event.data).color === (subscription.filter as { color: string }).color,
    sample: (_projectId, type) => ({ key: 'sample', type, occurredAt: new Date(0), actor: { type: 'user', id: 'u-sample' }, data: { id: 'thing-sample', color: 'red' } }),
    ...overrides
  }
}

export function thingEvent (n: number, extra: Partial<WebhookEventInput> = {}): WebhookEventInput {
  return {
    key: `thing-${n}:change-${n}`,
    type: 'thing.updated',
    occurredAt: new Date(Date.UTC(2026, 0, 1) + n * 1000),
    actor: { type: 'user', id: 'u1' },
    data: { id: `thing-${n}`, color: 'red', size: n },
    changes: { size: { from: n - 1, to: n }, color: { from: 'blue', to: 'red' } },
    ...extra
  }
}

/** A resolver that knows only `answers` (no test asks the real DNS); any other name does not resolve. */
export function resolver (answers: Record<string, string[]>): ResolveAll {
  return async (host) => {
    const found = answers[host]
    if (found === undefined) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' })
    return found
  }
}

export const PUBLIC_NAMES = { 'example.com': ['93.184.215.14'] }

/**
 * Runs every delivery job due, one after another, as a worker would; answers
 * how many attempts they made (a webhook's job sends all it owes in one run).
 */
export async function drainDeliveries (webhooks: Webhooks, queue: JobQueue): Promise<number> {
  const before = await webhooks.deliverer.attempts.countDocuments({})
  for (;;) {
    const job = await queue.claim('test-worker', [WEBHOOK_DELIVER_JOB], 60_000)
    if (job === null) return await webhooks.deliverer.attempts.countDocuments({}) - before
    try {
      await queue.complete(job, 'test-worker', await webhooks.deliver(job.payload))
    } catch (error) {
      await queue.fail(job, 'test-worker', error)
    }
  }
}

export interface Engine { webhooks: Webhooks, queue: JobQueue, store: Store, clock: ManualClock, owner: { projectId: string, source: string }, drain: () => Promise<number> }

/**
 * The engine on a temp embedded store and the durable queue, one manual
 * clock for both; `drain` runs every delivery job due by that clock, one
 * after another, as a worker would.
 */
export async function engine (t: Test, options: { env?: Record<string, string>, resolveAll?: ResolveAll, source?: WebhookSource | null } = {}): Promise<Engine> {
  const clock = new ManualClock(Date.UTC(2026, 0, 1))
  const { store, queue } = await openTestJobQueue(t, clock)
  const webhooks = await buildWebhooks({
    store,
    clock,
    newId: createIdGenerator(() => clock.nowMs()),
    secrets: new SecretBox(randomBytes(32)),
    cursors: new Cursors(randomBytes(32)),
    jobs: queue,
    config: parseWebhooksConfig({ WEBHOOK_ALLOWED_HOSTS: '127.0.0.1', ...options.env }),
    random: () => 0.5,
    resolveAll: options.resolveAll ?? resolver(PUBLIC_NAMES)
  })
  if (options.source !== null) webhooks.registerSource(options.source ?? thingSource())
  const drain = async (): Promise<number> => await drainDeliveries(webhooks, queue)
  return { webhooks, queue, store, clock, owner: { projectId: 'p1', source: 'things' }, drain }
}
