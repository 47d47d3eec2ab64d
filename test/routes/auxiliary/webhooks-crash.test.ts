import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { setTimeout as delay } from 'node:timers/promises'
import t from 'tap'
import { tempDir } from '../../helper.js'

/**
 * The crash bar of record webhooks (issue 33): the server as a child process
 * on a temp DATA_DIR, 1,000 acknowledged creates, `kill -9` right after the
 * last answer, a restart on the same DATA_DIR, and every create's event at
 * the receiver, each under one event id. Delivery is at least once, so an
 * attempt the kill cut short may arrive again: with the same event id.
 */
const CREATES = 1000
// Two server starts, 1,000 creates and 1,000 deliveries: on a loaded 2-core machine this file needs more than tap's 120 s.
t.setTimeout(420_000)

interface Server { child: ChildProcess, base: string }

async function startServer (env: Record<string, string>): Promise<Server> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'server.ts'], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
  t.teardown(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL') })
  let output = ''
  child.stderr?.on('data', (chunk: Buffer) => { output += chunk.toString() })
  const base = await new Promise<string>((resolve, reject) => {
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString()
      const match = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(output)
      if (match !== null) resolve(match[1])
    })
    child.once('exit', (code) => { reject(new Error(`the server exited (${String(code)}) before listening: ${output}`)) })
  })
  return { child, base }
}

async function api (base: string, method: string, path: string, token: string | null, body?: unknown): Promise<{ status: number, data: any }> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { ...(token === null ? {} : { authorization: `Bearer ${token}` }), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  const parsed = await res.json() as { data?: unknown }
  return { status: res.status, data: parsed.data ?? parsed }
}

t.test('kill -9 right after 1,000 acknowledged creates: all 1,000 events arrive after the restart, one event id each', async (t) => {
  const received: Array<{ id: string, recordId: string }> = []
  const receiver = createServer((request, response) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id: string, data: { record: { id: string } } }
      received.push({ id: body.id, recordId: body.data.record.id })
      response.end('ok')
    })
  }).listen(0, '127.0.0.1')
  await once(receiver, 'listening')
  t.teardown(() => { receiver.closeAllConnections(); receiver.close() })
  const hook = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`

  const env = { PORT: '0', GATEWAY_PORT: 'off', DATA_DIR: tempDir(t), LOG_LEVEL: 'info', WEBHOOK_ALLOWED_HOSTS: '127.0.0.1', GIT_HOSTING_ENABLED: 'false' }
  const first = await startServer(env)
  await api(first.base, 'POST', '/api/auth/register', null, { email: 'ada@example.com', password: 'correct horse battery', name: 'Ada' })
  const token = (await api(first.base, 'POST', '/api/auth/login', null, { email: 'ada@example.com', password: 'correct horse battery' })).data.accessToken as string
  const orgId = (await api(first.base, 'POST', '/api/organizations', token, { name: 'Acme' })).data.id as string
  const projectId = (await api(first.base, 'POST', '/api/projects', token, { orgId, name: 'Site' })).data.id as string
  const collection = await api(first.base, 'POST', `/api/projects/${projectId}/collections`, token, {
    name: 'posts', fields: [{ name: 'n', type: 'number' }], methods: { create: { enabled: true, rule: { requireAuth: false } } }
  })
  t.equal(collection.status, 201)
  const webhook = await api(first.base, 'POST', `/api/projects/${projectId}/auxiliary/webhooks`, token, { url: hook, events: ['record.created'], filter: { collections: ['posts'] } })
  t.equal(webhook.status, 201)

  const started = Date.now()
  const acknowledged = new Set<string>()
  let next = 0
  await Promise.all(Array.from({ length: 8 }, async () => {
    while (next < CREATES) {
      const n = next++
      const created = await api(first.base, 'POST', `/api/p/${projectId}/posts`, null, { n })
      if (created.status === 201) acknowledged.add(created.data.id as string)
    }
  }))
  first.child.kill('SIGKILL')
  await once(first.child, 'exit')
  t.equal(acknowledged.size, CREATES, 'every create was acknowledged')
  t.comment(`${CREATES} creates in ${Date.now() - started} ms; before the kill the receiver had ${new Set(received.map((event) => event.id)).size} events`)

  const restarted = Date.now()
  const second = await startServer(env)
  const deadline = Date.now() + 180_000
  while (new Set(received.map((event) => event.recordId)).size < CREATES && Date.now() < deadline) await delay(200)
  const idsByRecord = new Map<string, Set<string>>()
  for (const event of received) idsByRecord.set(event.recordId, (idsByRecord.get(event.recordId) ?? new Set()).add(event.id))
  t.same([...idsByRecord.keys()].filter((id) => !acknowledged.has(id)), [], 'no event for a write that was not acknowledged')
  t.same([...acknowledged].filter((id) => !idsByRecord.has(id)), [], 'an event for every acknowledged create')
  t.same([...idsByRecord.values()].filter((ids) => ids.size > 1).length, 0, 'each create under one event id')
  t.comment(`all in ${Date.now() - restarted} ms after the restart; ${received.length} requests for ${idsByRecord.size} events (repeats of one event id: at-least-once delivery)`)
  second.child.kill('SIGTERM')
  await once(second.child, 'exit')
})
