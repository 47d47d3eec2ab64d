import t from 'tap'
import { statSync } from 'node:fs'
import { join } from 'node:path'
import type { FastifyPluginAsync } from 'fastify'
import { buildApp } from '../../app.js'
import { testConfig } from '../helper.js'
import { JOBS_PRUNE_JOB } from '../../services/jobs.js'

t.test('the app runs registered job types and finishes jobs in flight on close', async (t) => {
  const runs: string[] = []
  let releaseSlowJob: () => void = () => {}
  let markSlowJobStarted: () => void = () => {}
  const slowJobStarted = new Promise<void>((resolve) => { markSlowJobStarted = resolve })
  const family: FastifyPluginAsync = async (app) => {
    app.registerJobHandler('greet', async (payload) => { runs.push(String(payload.name)); return { greeted: payload.name } })
    app.registerJobHandler('slow', async () => {
      markSlowJobStarted()
      await new Promise<void>((resolve) => { releaseSlowJob = resolve })
      runs.push('slow')
      return { done: true }
    })
  }

  const config = testConfig(t)
  const app = await buildApp(config)
  await app.register(family)
  await app.ready()
  t.equal(statSync(join(config.dataDir, 'master.key')).mode & 0o777, 0o600, 'the master key file is private')

  const job = await app.jobs.enqueue('greet', { name: 'ada' })
  let stored = await app.jobs.get(job._id)
  for (let i = 0; i < 100 && stored?.status !== 'succeeded'; i++) {
    await new Promise((resolve) => setTimeout(resolve, 50))
    stored = await app.jobs.get(job._id)
  }
  t.equal(stored?.status, 'succeeded', 'the worker ran the job')
  t.same(stored?.result, { greeted: 'ada' })
  t.same(runs, ['ada'])

  const slow = await app.jobs.enqueue('slow', {})
  await slowJobStarted
  const closing = app.close()
  setTimeout(() => releaseSlowJob(), 100)
  await closing
  t.same(runs, ['ada', 'slow'], 'close waited for the job in flight')

  const reopened = await buildApp(config)
  t.teardown(() => reopened.close())
  await reopened.ready()
  t.equal((await reopened.jobs.get(slow._id))?.status, 'succeeded', 'its outcome was recorded before the store closed')
  t.throws(() => reopened.registerJobHandler('late', async () => null), /registered after the app started/, 'no handlers once running')
})

t.test('the app schedules the daily prune of finished jobs once, however often it starts', async (t) => {
  const config = testConfig(t)
  for (let start = 0; start < 2; start++) {
    const app = await buildApp(config)
    await app.ready()
    await app.close()
  }
  const app = await buildApp(config)
  t.teardown(() => app.close())
  await app.ready()
  const prunes = await app.jobs.jobs.find({ type: JOBS_PRUNE_JOB }).toArray()
  t.equal(prunes.length, 1, 'one recurring job for three starts')
  t.equal(prunes[0].everyMs, 24 * 60 * 60_000)
  t.ok(prunes[0].status === 'queued' || prunes[0].status === 'running', 'it never finishes')
})
