import t from 'tap'
import { statSync } from 'node:fs'
import { join } from 'node:path'
import type { FastifyPluginAsync } from 'fastify'
import { buildApp } from '../../app.js'
import { testConfig } from '../helper.js'
import { JOBS_PRUNE_JOB } from '../../services/jobs/queue.js'

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

t.test('long jobs fill only their own lane: a short job runs while every long slot is held', async (t) => {
  const started: string[] = []
  const release: Array<() => void> = []
  let closing = false
  const family: FastifyPluginAsync = async (app) => {
    app.registerJobHandler('build', async (payload) => {
      started.push(String(payload.name))
      if (!closing) await new Promise<void>((resolve) => { release.push(resolve) })
    }, { lane: 'long' })
    app.registerJobHandler('scale', async () => ({ scaled: true }))
    t.throws(() => app.registerJobHandler('scale', async () => null, { lane: 'long' }), /registered twice/, 'a type has one lane')
  }
  const app = await buildApp(testConfig(t, { JOB_WORKER_SLOTS: '1', JOB_WORKER_LONG_SLOTS: '1' }))
  await app.register(family)
  await app.ready()
  t.teardown(async () => {
    closing = true
    for (const resolve of release) resolve()
    await app.close()
  })
  const builds = [await app.jobs.enqueue('build', { name: 'one' }), await app.jobs.enqueue('build', { name: 'two' })]
  for (let i = 0; i < 200 && started.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 20))
  t.same(started, ['one'], 'the one long slot is taken')
  const scale = await app.jobs.enqueue('scale', {})
  let stored = await app.jobs.get(scale._id)
  for (let i = 0; i < 200 && stored?.status !== 'succeeded'; i++) {
    await new Promise((resolve) => setTimeout(resolve, 20))
    stored = await app.jobs.get(scale._id)
  }
  t.match(stored, { status: 'succeeded', result: { scaled: true } }, 'the short job ran beside it')
  t.equal((await app.jobs.get(builds[1]._id))?.status, 'queued', 'the second build waits for the long slot')
})
