import { WEBHOOK_DELIVER_JOB } from '../services/webhooks/index.js'
import { startBenchApp } from './bench-app.js'
import { notesProjects } from './notes-projects.js'

/**
 * The real app with two projects alike, each with a collection `notes` that
 * anyone may create in: `quiet` has no record webhook, `armed` one, to the
 * receiver in RECEIVER (the run's hello-world, a loopback address the
 * operator setting allows), `paused` one, paused (its events are kept for
 * replays and nothing is sent: the outbox's own cost on the request path),
 * and `fed` had one, deleted: the project stays armed, yet with no webhook
 * left its writes keep no entry, so they pay the feed's two reads only
 * (docs/auxiliary.md). `/bench/backlog` says how many deliveries are
 * still queued, so the runner can let them drain between slices.
 */
const { app } = await startBenchApp({ WEBHOOK_ALLOWED_HOSTS: '127.0.0.1' }, { dataDir: process.env.DATA_DIR })
app.get('/bench/backlog', async () => ({ queued: await app.jobs.jobs.countDocuments({ type: WEBHOOK_DELIVER_JOB, status: { $in: ['queued', 'running'] } }) }))
const address = await app.listen({ port: 0, host: '127.0.0.1' })
const receiver = `${process.env.RECEIVER as string}/`
const { ids: seeded, webhookIds, auth } = await notesProjects(app, ['quiet', 'armed', 'paused', 'fed'], (name) => {
  if (name === 'quiet') return null
  return name === 'paused' ? { url: receiver, active: false } : { url: receiver }
})
// `fed` stays armed once its webhook is gone; with no webhook left its writes keep no entry (docs/auxiliary.md).
const deleted = await app.inject({ method: 'DELETE', url: `/api/projects/${seeded.fed}/auxiliary/webhooks/${webhookIds.fed}`, headers: auth })
if (deleted.statusCode >= 300) throw new Error(`deleting fed's webhook: ${deleted.statusCode} ${deleted.body}`)
process.send?.({ address, ...seeded })
