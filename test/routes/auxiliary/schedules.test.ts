import { once } from 'node:events'
import { createServer, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'
import t, { type Test } from 'tap'
import { projectCollectionName } from '../../../services/projects/naming.js'
import { verifyWebhookSignature } from '../../../services/webhooks/signing.js'
import { buildTestApp, call, tempDir } from '../../helper.js'
import { auxiliarySetup, eventually } from './fixtures.js'

interface Hit { headers: IncomingHttpHeaders, body: string }

/** A loopback receiver; `hold` keeps answers back until released. */
async function receiver (t: Test) {
  const hits: Hit[] = []
  let held: Array<() => void> | null = null
  const server = createServer((request, response) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      hits.push({ headers: request.headers, body: Buffer.concat(chunks).toString('utf8') })
      const answer = () => { response.end('done') }
      if (held === null) answer()
      else held.push(answer)
    })
  }).listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => { server.closeAllConnections(); server.close() })
  return {
    hits,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/tick`,
    hold: () => { held = [] },
    release: () => { for (const answer of held ?? []) answer(); held = null }
  }
}

const daily = { kind: 'cron', expression: '0 3 * * *', timezone: 'UTC' }

t.test('an HTTP schedule: next five fires, the secret once, a signed call with the slot in its body', async (t) => {
  const { app, owner, base } = await auxiliarySetup(t)
  const hook = await receiver(t)
  const made = await call(app, 'POST', `${base}/schedules`, owner.auth, {
    name: 'nightly', trigger: daily, action: { type: 'http', method: 'POST', url: hook.url, body: '{"slot":"{{slot}}"}' }
  })
  t.equal(made.status, 201)
  const { schedule, secret } = made.body.data
  t.match(secret, /^schsec_/)
  t.equal(schedule.nextFires.length, 5)
  t.ok(schedule.nextFires.every((at: string) => at.endsWith('T03:00:00.000Z')))
  t.equal(made.headers.location, `${base}/schedules/${schedule.id as string}`)
  t.notOk(JSON.stringify((await call(app, 'GET', `${base}/schedules/${schedule.id as string}`, owner.auth)).body).includes(secret), 'the secret is never answered again')

  const ran = await call(app, 'POST', `${base}/schedules/${schedule.id as string}/runs`, owner.auth)
  t.equal(ran.status, 201)
  t.equal(ran.body.data.status, 'succeeded')
  t.equal(ran.body.data.output, 'HTTP 200: done')
  t.equal(hook.hits.length, 1)
  const hit = hook.hits[0]
  t.same(JSON.parse(hit.body), { slot: ran.body.data.slot })
  t.equal(verifyWebhookSignature({ header: hit.headers['plinth-signature'] as string, rawBody: hit.body, secrets: [secret] }).ok, true, 'the receiver verifies the signature')
  t.equal(verifyWebhookSignature({ header: hit.headers['plinth-signature'] as string, rawBody: hit.body, secrets: ['schsec_wrong'] }).ok, false)
  const runs = await call(app, 'GET', `${base}/schedules/${schedule.id as string}/runs?limit=1`, owner.auth)
  t.equal(runs.body.data.items[0].id, ran.body.data.id)
  t.equal((await call(app, 'GET', `${base}/schedules/${schedule.id as string}/runs/${ran.body.data.id as string}`, owner.auth)).body.data.status, 'succeeded')

  // Rotation: the new secret shown once; during the grace both sign, so a receiver verifies with either.
  const rotateUrl = `${base}/schedules/${schedule.id as string}/rotate-secret`
  const rotated = await call(app, 'POST', rotateUrl, owner.auth, {})
  t.equal(rotated.status, 200)
  const second = rotated.body.data.secret as string
  t.match(second, /^schsec_/)
  t.not(second, secret)
  const signedWith = async (): Promise<(secrets: string[]) => boolean> => {
    await call(app, 'POST', `${base}/schedules/${schedule.id as string}/runs`, owner.auth)
    const last = hook.hits[hook.hits.length - 1]
    return (secrets) => verifyWebhookSignature({ header: last.headers['plinth-signature'] as string, rawBody: last.body, secrets }).ok
  }
  const duringGrace = await signedWith()
  t.ok(duringGrace([secret]) && duringGrace([second]), 'during the grace the old and the new secret each verify')
  const retired = await call(app, 'POST', rotateUrl, owner.auth, { previousExpiresInSeconds: 0 })
  const third = retired.body.data.secret as string
  const afterRetiring = await signedWith()
  t.same([afterRetiring([third]), afterRetiring([second]), afterRetiring([secret])], [true, false, false], 'a grace of 0 retires the previous secret at once; an older one is gone')
  t.notOk(JSON.stringify((await call(app, 'GET', `${base}/schedules/${schedule.id as string}`, owner.auth)).body).includes(third), 'the new secret is not answered again')
  const bad = await call(app, 'POST', rotateUrl, owner.auth, { previousExpiresInSeconds: -1 })
  t.same([bad.status, bad.body.code], [400, 'APP_VALIDATION_FAILED'])
  t.match(bad.body.message, /previousExpiresInSeconds/, 'names the field')
})

t.test('overlap skip: a slot while the previous run still goes is recorded skipped', async (t) => {
  const { app, owner, base } = await auxiliarySetup(t)
  const hook = await receiver(t)
  const id = (await call(app, 'POST', `${base}/schedules`, owner.auth, { name: 'slow', trigger: daily, overlap: 'skip', action: { type: 'http', method: 'GET', url: hook.url } })).body.data.schedule.id as string
  hook.hold()
  const first = call(app, 'POST', `${base}/schedules/${id}/runs`, owner.auth)
  await eventually(t, 'the first call arrives', async () => hook.hits.length === 1)
  const second = await call(app, 'POST', `${base}/schedules/${id}/runs`, owner.auth)
  t.equal(second.body.data.status, 'skipped')
  t.match(second.body.data.error, /still going/)
  hook.release()
  t.equal((await first).body.data.status, 'succeeded')
  t.equal(hook.hits.length, 1)
})

t.test('a collection delete removes only matching records older than N days, as the schedule with records.write', async (t) => {
  const { app, owner, projectId, base, data } = await auxiliarySetup(t)
  for (const title of ['old draft', 'old keep', 'new draft']) t.equal((await call(app, 'POST', data, {}, { title })).status, 201)
  const oldDate = new Date(Date.now() - 40 * 86_400_000)
  const all = await app.records.list(projectId, 'posts', { kind: 'admin', userId: owner.id, canRead: true, canWrite: true }, {})
  for (const record of all.items.filter((item) => String(item.title).startsWith('old'))) {
    await app.store.collection(projectCollectionName(projectId, 'posts')).updateOne({ _id: record.id }, { $set: { createdAt: oldDate } })
  }
  const action = { type: 'collection', collection: 'posts', operation: 'delete', filter: { title: { $in: ['old draft', 'new draft'] } }, olderThanDays: 30 }
  const withoutPermission = await call(app, 'POST', `${base}/schedules`, owner.auth, { name: 'purge', trigger: daily, action })
  t.equal(withoutPermission.status, 400)
  t.equal(withoutPermission.body.details.fields[0].path, 'body.permissions')
  const made = await call(app, 'POST', `${base}/schedules`, owner.auth, { name: 'purge', trigger: daily, action, permissions: ['records.write'] })
  t.equal(made.status, 201, JSON.stringify(made.body))
  const ran = await call(app, 'POST', `${base}/schedules/${made.body.data.schedule.id as string}/runs`, owner.auth)
  t.equal(ran.body.data.status, 'succeeded', JSON.stringify(ran.body))
  t.equal(ran.body.data.output, 'deleted 1 of 1 matching records')
  const left = (await app.records.list(projectId, 'posts', { kind: 'admin', userId: owner.id, canRead: true, canWrite: true }, {})).items.map((item) => item.title).sort()
  t.same(left, ['new draft', 'old keep'])
})

t.test('refusals: outsider 404, reader 403 naming auxiliary.manage, a member cannot give more than they hold, bad cron and timezone 400 naming the field', async (t) => {
  const { app, owner, viewer, outsider, base } = await auxiliarySetup(t)
  const body = { name: 'n', trigger: daily, action: { type: 'http', method: 'GET', url: 'https://example.com/' } }
  t.equal((await call(app, 'GET', `${base}/schedules`, outsider.auth)).status, 404)
  const reader = await call(app, 'POST', `${base}/schedules`, viewer.auth, body)
  t.equal(reader.status, 403)
  t.match(reader.body.message, /auxiliary\.manage/)
  t.equal((await call(app, 'GET', `${base}/schedules`, viewer.auth)).status, 200)
  const badCron = await call(app, 'POST', `${base}/schedules`, owner.auth, { ...body, trigger: { kind: 'cron', expression: '99 * * * *', timezone: 'UTC' } })
  t.equal(badCron.status, 400)
  t.equal(badCron.body.code, 'APP_SCHEDULE_INVALID')
  t.equal(badCron.body.details.fields[0].path, 'body.trigger.expression')
  const badZone = await call(app, 'POST', `${base}/schedules`, owner.auth, { ...body, trigger: { kind: 'cron', expression: '0 3 * * *', timezone: 'Nowhere/Special' } })
  t.equal(badZone.status, 400)
  t.equal(badZone.body.details.fields[0].path, 'body.trigger.timezone')
  const loopback = await call(app, 'POST', `${base}/schedules`, owner.auth, { ...body, action: { ...body.action, url: 'http://10.1.2.3/' } })
  t.equal(loopback.status, 400)
  t.equal(loopback.body.code, 'APP_SCHEDULE_URL_FORBIDDEN')
  const tooMuch = await call(app, 'POST', `${base}/schedules`, owner.auth, { ...body, permissions: ['no.such'] })
  t.equal(tooMuch.status, 403)
  t.equal(tooMuch.body.code, 'APP_SCHEDULE_PERMISSION_EXCEEDED')
})

t.test('two app instances on one DATA_DIR: a slot runs exactly once; after downtime catch-up runs a missed slot once or skips it', async (t) => {
  const dir = tempDir(t)
  const env = { DATA_DIR: dir, WEBHOOK_ALLOWED_HOSTS: '127.0.0.1' }
  const { app: first, owner, base } = await auxiliarySetup(t, env)
  const second = await buildTestApp(t, { env })
  const hook = await receiver(t)
  const create = async (name: string, catchUp: string) => (await call(first, 'POST', `${base}/schedules`, owner.auth, { name, trigger: daily, catchUp, action: { type: 'http', method: 'POST', url: hook.url, body: '{"slot":"{{slot}}"}' } })).body.data.schedule
  const onTime = await create('on time', 'once')
  const slot = new Date(onTime.nextFires[0] as string)

  // The controllable clock: each node's tick is told the time, just after the slot; both tick at once, twice.
  for (const at of [1000, 2000]) await Promise.all([first, second].map(async (app) => { await app.auxiliary.schedules.tick(new Date(slot.getTime() + at)) }))
  await eventually(t, 'the slot ran', async () => hook.hits.length >= 1)
  // The slot's job handed to both nodes' handlers again still runs once.
  const payload = { scheduleId: onTime.id, slot: slot.toISOString(), trigger: 'slot' as const }
  for (const app of [first, second]) t.equal(await app.auxiliary.scheduleRuns.runSlot(payload), null, 'the slot is taken')
  const runs = (await call(second, 'GET', `${base}/schedules/${onTime.id as string}/runs`, owner.auth)).body.data.items
  t.equal(runs.length, 1, 'one run')
  t.equal(runs[0].slot, slot.toISOString())
  t.equal(hook.hits.length, 1, 'one call')

  // Everything down over the next slot: a tick a day later finds it missed.
  const catchUp = await create('catch up', 'once')
  const skip = await create('skip', 'skip')
  const missed = new Date(catchUp.nextFires[0] as string)
  const later = new Date(missed.getTime() + 3 * 3_600_000)
  for (const app of [first, second]) await app.auxiliary.schedules.tick(later)
  const settled = async (id: string) => await eventually(t, `a run of ${id}`, async () => {
    const items = (await call(first, 'GET', `${base}/schedules/${id}/runs`, owner.auth)).body.data.items
    return items.length > 0 && items.every((run: { status: string }) => run.status !== 'running') ? items : null
  })
  const caught = await settled(catchUp.id as string)
  t.equal(caught.length, 1)
  t.match(caught[0], { trigger: 'catch-up', status: 'succeeded', slot: missed.toISOString() })
  const skipped = await settled(skip.id as string)
  t.equal(skipped.length, 1)
  t.match(skipped[0], { trigger: 'missed', status: 'skipped' })
  t.equal(hook.hits.length, 2, 'the catch-up called once, the skipping schedule not at all')
})
