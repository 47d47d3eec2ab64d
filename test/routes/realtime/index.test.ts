import t from 'tap'
import { call } from '../../helper.js'
import { notesProject } from './fixtures.js'
import { SseStream } from './sse-client.js'
import { ProjectTokens } from '../../../services/projects/project-tokens.js'
import { systemClock } from '../../../services/platform/clock.js'
import { createClient } from '../../../sdk/client/index.js'

const NOTES = [{ collection: 'notes' }]

t.test('a subscriber sees its own create as its rule shows it, and never another user\'s private record', async (t) => {
  const { register, stream, write } = await notesProject(t)
  const ann = await register('ann@example.com')
  const bob = await register('bob@example.com')
  const feed = await stream(ann.auth, NOTES)
  t.teardown(() => { feed.close() })
  const ready = await feed.nextOf('ready')
  t.same(ready?.data, { lastEventId: '0', subscriptions: 1 }, 'ready, from the head of the log')
  const first = await write('POST', 'notes', ann.auth, { title: 'mine', secret: 'pin 1234' })
  const created = await feed.nextOf('create', 'update', 'delete')
  t.equal(created?.event, 'create')
  t.match(created?.data, { subscriptions: [0], collection: 'notes', record: { id: first.id, title: 'mine', owner: ann.id, version: 1 } })
  t.notOk('secret' in (created?.data.record ?? {}), 'the field the rule denies never leaves')
  t.ok(/^\d+$/.test(created?.id ?? ''), 'each record event has an id')
  await write('POST', 'notes', bob.auth, { title: 'bob\'s', secret: 'his' })
  const second = await write('POST', 'notes', ann.auth, { title: 'mine again' })
  await write('PUT', `notes/${first.id}`, ann.auth, { title: 'mine, edited' })
  const next = await feed.nextOf('create', 'update', 'delete')
  t.same([next?.event, next?.data.record.id], ['create', second.id], 'bob\'s note, written in between, was never sent to ann')
  t.ok(Number(next?.id) > Number(created?.id) + 1, 'its number was skipped: the event exists, ann may not see it')
  const updated = await feed.nextOf('create', 'update', 'delete')
  t.same([updated?.event, updated?.data.record.title], ['update', 'mine, edited'])
  await write('DELETE', `notes/${second.id}`, ann.auth)
  const gone = await feed.nextOf('create', 'update', 'delete')
  t.same([gone?.event, gone?.data.record.id], ['delete', second.id], 'a delete carries the record as it was')
})

t.test('a record subscription and a filter narrow what is sent', async (t) => {
  const { register, stream, write } = await notesProject(t)
  const ann = await register('ann@example.com')
  const kept = await write('POST', 'notes', ann.auth, { title: 'watched' })
  const feed = await stream(ann.auth, [{ collection: 'notes', record: kept.id }, { collection: 'notes', filter: { title: { $regex: '^urgent' } } }])
  t.teardown(() => { feed.close() })
  await feed.nextOf('ready')
  await write('POST', 'notes', ann.auth, { title: 'boring' })
  await write('POST', 'notes', ann.auth, { title: 'urgent: call' })
  await write('PUT', `notes/${kept.id}`, ann.auth, { title: 'urgent and watched' })
  const first = await feed.nextOf('create', 'update', 'delete')
  t.same([first?.event, first?.data.record.title, first?.data.subscriptions], ['create', 'urgent: call', [1]], 'only the filter\'s match, not the boring note')
  const second = await feed.nextOf('create', 'update', 'delete')
  t.same([second?.event, second?.data.subscriptions], ['update', [0, 1]], 'one event, naming both subscriptions it matched')
})

t.test('a dropped connection resumes with Last-Event-ID without loss; a gap too old says to reload', async (t) => {
  const { register, stream, write } = await notesProject(t)
  const ann = await register('ann@example.com')
  const feed = await stream(ann.auth, NOTES)
  await feed.nextOf('ready')
  const one = await write('POST', 'notes', ann.auth, { title: 'one' })
  const seen = await feed.nextOf('create')
  feed.close()
  const two = await write('POST', 'notes', ann.auth, { title: 'two' })
  await write('PUT', `notes/${one.id}`, ann.auth, { title: 'one, edited' })
  await write('DELETE', `notes/${two.id}`, ann.auth)
  const resumed = await stream(ann.auth, NOTES, { 'last-event-id': seen?.id ?? '' })
  t.teardown(() => { resumed.close() })
  t.same((await resumed.nextOf('ready'))?.data.lastEventId, seen?.id, 'resumes where it left off')
  const missed = []
  for (let i = 0; i < 3; i++) missed.push(await resumed.nextOf('create', 'update', 'delete', 'gap'))
  t.same(missed.map((event) => [event?.event, event?.data.record.id]), [['create', two.id], ['update', one.id], ['delete', two.id]], 'everything missed, in order')
  const three = await write('POST', 'notes', ann.auth, { title: 'three' })
  t.same((await resumed.nextOf('create'))?.data.record.id, three.id, 'then live again')

  for (const lastEventId of ['999999999', 'not-a-number']) {
    const lost = await stream(ann.auth, NOTES, { 'last-event-id': lastEventId })
    const gap = await lost.next()
    t.same([gap?.event, gap?.data.message], ['gap', `Events after ${lastEventId} are no longer kept; reload the data and go on from here`], `${lastEventId}: a gap, told before ready`)
    t.equal((await lost.next())?.event, 'ready')
    lost.close()
  }
})

t.test('an expired token or a deleted user ends the stream with an end event', async (t) => {
  const { app, admin, projectId, register, stream } = await notesProject(t)
  const bob = await register('bob@example.com')
  // A project JWT signed with the project's own key, only shorter-lived than the configured minimum.
  const short = new ProjectTokens({ keyFor: (id) => app.deriveSecretKey(`jwt:project:${id}`), clock: systemClock, issuer: app.config.tokenIssuer, ttlSeconds: 2 }).sign(projectId, bob.id)
  const expiring = await stream({ authorization: `Bearer ${short.token}` }, NOTES)
  await expiring.nextOf('ready')
  const ended = await expiring.nextOf('end')
  t.same(ended?.data.reason, 'expired', 'the token\'s expiry ends the stream')
  t.equal(await expiring.next(), null, 'and the server closes it')

  const carl = await register('carl@example.com')
  const live = await stream(carl.auth, NOTES)
  await live.nextOf('ready')
  const usersDefinition = `/api/projects/${projectId}/collections/_users`
  const current = (await call(app, 'GET', usersDefinition, admin.auth)).body.data
  const opened = await call(app, 'PUT', usersDefinition, admin.auth, { fields: current.fields, methods: { delete: { enabled: true, rule: null } } })
  t.equal(opened.status, 200, `admins may delete users: ${JSON.stringify(opened.body)}`)
  const removed = await call(app, 'DELETE', `/api/p/${projectId}/_users/${carl.id}`, admin.auth)
  t.equal(removed.status, 200, 'the admin deletes carl')
  const revoked = await live.nextOf('end')
  t.equal(revoked?.data.reason, 'revoked', 'carl\'s stream ends')
  t.equal(await live.next(), null)
})

t.test('deleting or disabling a user ends their streams at once, not at the next recheck', async (t) => {
  // The periodic recheck is an hour away: only the delete or disable itself can end the streams.
  const { app, admin, projectId, register, stream } = await notesProject(t, { REALTIME_RECHECK_MS: '3600000' })
  const usersDefinition = `/api/projects/${projectId}/collections/_users`
  const current = (await call(app, 'GET', usersDefinition, admin.auth)).body.data
  const opened = await call(app, 'PUT', usersDefinition, admin.auth, {
    fields: [...current.fields, { name: 'disabled', type: 'boolean' }],
    methods: { delete: { enabled: true, rule: null }, update: { enabled: true, rule: null } }
  })
  t.equal(opened.status, 200, `admins may delete and disable users: ${JSON.stringify(opened.body)}`)
  const carl = await register('carl@example.com')
  const dora = await register('dora@example.com')
  const carls = await stream(carl.auth, NOTES)
  const doras = await stream(dora.auth, NOTES)
  await carls.nextOf('ready')
  await doras.nextOf('ready')
  t.equal(app.realtime.hub.size, 2)
  t.equal((await call(app, 'DELETE', `/api/p/${projectId}/_users/${carl.id}`, admin.auth)).status, 200, 'the admin deletes carl')
  t.equal(app.realtime.hub.size, 1, 'carl\'s stream was ended by the delete itself')
  t.equal((await carls.nextOf('end'))?.data.reason, 'revoked')
  t.equal(await carls.next(), null, 'and closed')
  const disabled = await call(app, 'PUT', `/api/p/${projectId}/_users/${dora.id}`, admin.auth, { disabled: true })
  t.equal(disabled.status, 200, `the admin disables dora: ${JSON.stringify(disabled.body)}`)
  t.equal(app.realtime.hub.size, 0, 'dora\'s stream was ended by the update itself')
  t.equal((await doras.nextOf('end'))?.data.reason, 'revoked')
})

t.test('ending sessions logs one revoke entry a call, and none while no stream follows the project', async (t) => {
  const { app, projectId, register, stream, write } = await notesProject(t)
  const ann = await register('ann@example.com')
  const bob = await register('bob@example.com')
  const carl = await register('carl@example.com')
  const logged = async () => await app.store.collection('realtime_events').countDocuments({ projectId })
  await app.projectAuth.auth.endSessions(projectId, [ann.id, bob.id])
  const changed = await call(app, 'POST', `/api/p/${projectId}/auth/password`, carl.auth, { currentPassword: 'correct horse battery', newPassword: 'another horse battery' })
  t.equal(changed.status, 200, `carl changes his password: ${JSON.stringify(changed.body)}`)
  t.equal(await logged(), 0, 'no subscriber has armed the project: nothing is logged')

  const dora = await register('dora@example.com')
  const feed = await stream(dora.auth, NOTES)
  await feed.nextOf('ready')
  await app.projectAuth.auth.endSessions(projectId, [ann.id, bob.id, carl.id])
  t.equal(await logged(), 1, 'one entry for the three users')
  const note = await write('POST', 'notes', dora.auth, { title: 'still followed' })
  t.same((await feed.nextOf('create'))?.data.record.id, note.id, 'and dora\'s stream goes on')
})

t.test('refusals come in the envelope, with the limits\' own statuses', async (t) => {
  const { register, subscribe, stream } = await notesProject(t)
  const ann = await register('ann@example.com')
  const refused = async (headers: Record<string, string>, subscriptions: unknown) => {
    const opened = await subscribe(headers, subscriptions)
    if (opened instanceof SseStream) { opened.close(); return null }
    return [opened.status, opened.body.code]
  }
  t.same(await refused(ann.auth, [{ collection: 'notes' }, { collection: 'notes' }, { collection: 'notes' }, { collection: 'notes' }]), [400, 'APP_REALTIME_TOO_MANY_SUBSCRIPTIONS'], 'more subscriptions than REALTIME_MAX_SUBSCRIPTIONS')
  t.same(await refused(ann.auth, { collection: 'notes' }), [400, 'APP_REALTIME_INVALID_SUBSCRIPTION'], 'not a list')
  t.same(await refused(ann.auth, [{ collection: 'notes', sort: 'title' }]), [400, 'APP_REALTIME_INVALID_SUBSCRIPTION'], 'an unknown property')
  t.same(await refused(ann.auth, [{ collection: 'nothing' }]), [404, 'APP_COLLECTION_NOT_FOUND'], 'no such collection')
  t.same(await refused(ann.auth, [{ collection: 'notes', filter: { secret: 'pin 1234' } }]), [400, 'APP_INVALID_FILTER'], 'a filter on a denied field would tell its value')
  t.same(await refused({}, NOTES), [401, 'APP_UNAUTHORIZED'], 'the rule needs a user')
  const held = [await stream(ann.auth, NOTES), await stream(ann.auth, NOTES)]
  t.same(await refused(ann.auth, NOTES), [429, 'APP_REALTIME_TOO_MANY_CONNECTIONS'], 'a third stream of the same user')
  held[0].close()
  await held[0].nextOf('never')
  let again = null
  // The server learns of the close when the socket goes; ask until it has.
  const deadline = Date.now() + 15_000
  while (again === null && Date.now() < deadline) {
    const opened = await subscribe(ann.auth, NOTES)
    if (opened instanceof SseStream) again = opened
    else await new Promise((resolve) => setTimeout(resolve, 20))
  }
  t.ok(again !== null, 'a closed stream frees its place')
  again?.close()
  held[1].close()
})

t.test('the SDK client\'s subscribe follows changes as an async iterator, resuming from an event id', async (t) => {
  const { projectId, base, register, stream, write } = await notesProject(t)
  const ann = await register('ann@example.com')
  const raw = await stream(ann.auth, NOTES)
  await raw.nextOf('ready')
  const note = await write('POST', 'notes', ann.auth, { title: 'through the SDK' })
  raw.close()
  const client = createClient({ baseUrl: base, projectId })
  await client.auth.login({ email: 'ann@example.com', password: 'correct horse battery' })
  const stop = new AbortController()
  t.teardown(() => { stop.abort() })
  // From event 0: the create written before the SDK connected comes first.
  const changes = client.subscribe<{ title: string }>([{ collection: 'notes' }], { signal: stop.signal, lastEventId: '0', reconnectDelayMs: 50 })
  const change = (await changes.next()).value
  t.match(change, { type: 'create', collection: 'notes', record: { id: note.id, title: 'through the SDK' } })
  await changes.return(undefined)
})
