import { WEBHOOK_DELIVER_JOB } from '../services/webhooks/index.js'
import { benchOwner, startBenchApp } from './bench-app.js'

/**
 * The real app with two projects alike, each with a collection `notes` that
 * anyone may create in: `quiet` has no record webhook, `armed` one, to the
 * receiver in RECEIVER (the run's hello-world, a loopback address the
 * operator setting allows), `paused` one, paused (its events are kept for
 * replays and nothing is sent: the outbox's own cost on the request path),
 * and `fed` had one, deleted: a project stays armed,
 * so its writes pay for the change feed's entries and publish with nothing
 * to deliver (docs/auxiliary.md). `/bench/backlog` says how many deliveries are
 * still queued, so the runner can let them drain between slices.
 */
const { app } = await startBenchApp({ WEBHOOK_ALLOWED_HOSTS: '127.0.0.1' }, { dataDir: process.env.DATA_DIR })
app.get('/bench/backlog', async () => ({ queued: await app.jobs.jobs.countDocuments({ type: WEBHOOK_DELIVER_JOB, status: { $in: ['queued', 'running'] } }) }))
const address = await app.listen({ port: 0, host: '127.0.0.1' })
const { accessToken, orgId } = await benchOwner(app)
const auth = { authorization: `Bearer ${accessToken}` }

async function must (url: string, payload: object): Promise<{ id: string }> {
  const res = await app.inject({ method: 'POST', url, headers: auth, payload })
  if (res.statusCode !== 201) throw new Error(`${url}: ${res.statusCode} ${res.body}`)
  return res.json().data
}

const open = { enabled: true, rule: { requireAuth: false } }
const seeded: Record<string, string> = {}
for (const name of ['quiet', 'armed', 'paused', 'fed']) {
  const project = await must('/api/projects', { orgId, name })
  await must(`/api/projects/${project.id}/collections`, {
    name: 'notes',
    fields: [{ name: 'title', type: 'text' }, { name: 'body', type: 'text' }, { name: 'views', type: 'number' }],
    methods: { create: open, get: open, list: open }
  })
  if (name !== 'quiet') {
    const base = `/api/projects/${project.id}/auxiliary/webhooks`
    const { webhook } = await must(base, { url: `${process.env.RECEIVER as string}/`, events: ['*'], filter: { collections: ['notes'] }, ...(name === 'paused' ? { active: false } : {}) }) as unknown as { webhook: { id: string } }
    if (name === 'fed') await app.inject({ method: 'DELETE', url: `${base}/${webhook.id}`, headers: auth })
  }
  seeded[name] = project.id
}
process.send?.({ address, ...seeded })
