import t from 'tap'
import type { Document, Store, StoreCollection } from '../../../services/store/types.js'
import type { WorkItemT, WorkItemTombstoneT } from '../../../schemas/tracker-work-items.js'
import { refusal, tempStore } from '../../helper.js'
import { ItemStore } from '../../../services/tracker/item-store.js'
import { ManualClock } from '../../../services/platform/clock.js'
import { createIdGenerator } from '../../../services/platform/ids.js'
import { DAY, people, trackerOn } from './fixture.js'

t.test('If-Match, lost races and no-op patches', async (t) => {
  const { tracker, project } = await trackerOn(t)
  const { bob, carol } = await project()
  const item = await tracker.workItems.create(bob, { title: 'Versioned' })
  t.equal(item.version, 1)
  t.match(await refusal(tracker.workItems.update(bob, item.id, { title: 'x' }, { ifMatch: 7 })), { status: 412, code: 'APP_TRACKER_VERSION_MISMATCH', details: { expected: 7, actual: 1 } })
  const same = await tracker.workItems.update(bob, item.id, { title: 'Versioned' })
  t.equal(same.version, 1, 'a patch that changes nothing writes nothing')
  const [a, b] = await Promise.all([
    tracker.workItems.update(bob, item.id, { priority: 'high' }),
    tracker.workItems.update(carol, item.id, { title: 'Renamed' })
  ])
  t.same([a.version, b.version].sort(), [2, 3], 'two racing patches without If-Match both land, one after the other')
  const final = await tracker.workItems.get(bob, item.id)
  t.match(final, { priority: 'high', title: 'Renamed', version: 3 })
  t.same((await tracker.activity.list(bob, item.id, {})).items.map((entry) => entry.field).sort(), ['created', 'priority', 'title'])
  await tracker.workItems.update(bob, item.id, { priority: 'low' }, { ifMatch: 3 })
  t.match(await refusal(tracker.workItems.delete(bob, item.id, { ifMatch: 3 })), { status: 412 })
})

t.test('item webhooks: a change is published only while the platform project has a tracker webhook', async (t) => {
  let subscribed = false
  const asked: string[] = []
  const published: Array<{ key: string, fields: string[], identifier: string }> = []
  const { tracker, project } = await trackerOn(t, undefined, {
    itemWebhooks: {
      subscribed: async (projectId) => { asked.push(projectId); return subscribed },
      publish: async (item, change, identifier) => { published.push({ key: `${identifier}-${item.seq}`, fields: change.entries.map((entry) => entry.field), identifier }) }
    }
  })
  const { bob } = await project()
  const first = await tracker.workItems.create(bob, { title: 'Nobody listens' })
  t.same(published, [], 'no webhook: nothing is handed over')
  t.ok(asked.length > 0 && asked.every((projectId) => projectId === 'proj1'), 'asked about the platform project')
  subscribed = true
  await tracker.workItems.update(bob, first.id, { priority: 'high' })
  const second = await tracker.workItems.create(bob, { title: 'Heard' })
  t.same(published, [
    { key: 'WEB-1', fields: ['priority'], identifier: 'WEB' },
    { key: 'WEB-2', fields: ['created'], identifier: 'WEB' }
  ], 'once one exists, every change is handed over with its key')
  t.equal(second.key, 'WEB-2')
})

/** The Store with the activity collection's inserts failing once after `armed` is set: a write cut short after its item update. */
function failingActivity (control: { armed: boolean }): (store: Store) => Store {
  return (store) => {
    const wrapped: Store = Object.create(store)
    wrapped.collection = <T extends Document>(name: string): StoreCollection<T> => {
      const inner = store.collection<T>(name)
      if (name !== 'tracker_activity') return inner
      const collection: StoreCollection<T> = Object.create(inner)
      const die = (): void => {
        if (!control.armed) return
        control.armed = false
        throw new Error('the process died here')
      }
      // An activity of one entry is written by insertOne, of several by insertMany: either dies.
      collection.insertMany = async (documents) => { die(); return await inner.insertMany(documents) }
      collection.insertOne = async (document) => { die(); return await inner.insertOne(document) }
      return collection
    }
    return wrapped
  }
}

t.test('a write cut short before its activity: the outbox writes it out on the next read or write', async (t) => {
  const control = { armed: false }
  const { tracker, project } = await trackerOn(t, failingActivity(control))
  const { bob } = await project()
  const item = await tracker.workItems.create(bob, { title: 'Outbox' })
  control.armed = true
  await t.rejects(tracker.workItems.update(bob, item.id, { priority: 'urgent' }), /died here/)
  t.equal((await tracker.workItems.get(bob, item.id)).priority, 'urgent', 'the item changed')
  t.same((await tracker.activity.list(bob, item.id, {})).items.map((entry) => [entry.field, entry.to]), [['created', 'WEB-1'], ['priority', 'urgent']], 'and its activity shows once the activity is read')
  control.armed = true
  await t.rejects(tracker.workItems.update(bob, item.id, { priority: 'low' }), /died here/)
  await tracker.workItems.update(bob, item.id, { title: 'Next write' })
  const fields = (await tracker.activity.list(bob, item.id, {})).items.map((entry) => entry.field)
  t.same(fields, ['created', 'priority', 'priority', 'title'], 'or once the item is written again, each entry once')
})

t.test('Idempotency-Key: one create per key, replays answer the same, another body is refused', async (t) => {
  const { tracker, project, store } = await trackerOn(t)
  const { bob, carol } = await project()
  const first = await tracker.workItems.create(bob, { title: 'Once' }, { idempotencyKey: 'key-1' })
  const again = await tracker.workItems.create(bob, { title: 'Once' }, { idempotencyKey: 'key-1' })
  t.equal(again.id, first.id)
  t.equal(again.key, 'WEB-1')
  t.match(await refusal(tracker.workItems.create(bob, { title: 'Other' }, { idempotencyKey: 'key-1' })), { status: 409, code: 'APP_TRACKER_IDEMPOTENCY_KEY_REUSED' })
  const carols = await tracker.workItems.create(carol, { title: 'Once' }, { idempotencyKey: 'key-1' })
  t.not(carols.id, first.id, 'keys are per caller')
  t.match(await refusal(tracker.workItems.create(bob, { title: 'x' }, { idempotencyKey: 'bad key' })), { status: 400, code: 'APP_TRACKER_INVALID_IDEMPOTENCY_KEY' })
  t.match(await refusal(tracker.workItems.create(bob, { title: ' ' }, { idempotencyKey: 'key-2' })), { status: 400 })
  t.equal((await tracker.workItems.create(bob, { title: 'Fixed' }, { idempotencyKey: 'key-2' })).title, 'Fixed', 'a refused request leaves its key free')

  // A create that died after inserting its item: the retry finds it under the reserved id.
  const records = store.collection<{ state: string, reservedId: string, startedAt: Date }>('tracker_idempotency')
  const beforeCount = await store.collection('tracker_items').countDocuments({})
  const crashed = await tracker.workItems.create(bob, { title: 'Crashed' }, { idempotencyKey: 'key-3' })
  await records.updateMany({}, { $set: { state: 'running', startedAt: new Date(0) } })
  const retried = await tracker.workItems.create(bob, { title: 'Crashed' }, { idempotencyKey: 'key-3' })
  t.equal(retried.id, crashed.id)
  t.equal(await store.collection('tracker_items').countDocuments({}), beforeCount + 1, 'one item for the key')
  await records.updateMany({}, { $set: { state: 'running', startedAt: new Date() } })
  t.match(await refusal(tracker.workItems.create(bob, { title: 'Crashed' }, { idempotencyKey: 'key-3' })), { status: 409, code: 'APP_TRACKER_IDEMPOTENCY_IN_PROGRESS' })

  const body = { ids: [first.id], patch: { priority: 'high' as const } }
  const bulk = await tracker.workItems.bulkPatch(bob, body, { idempotencyKey: 'bulk-1' })
  await tracker.workItems.update(bob, first.id, { priority: 'low' })
  t.same(await tracker.workItems.bulkPatch(bob, body, { idempotencyKey: 'bulk-1' }), bulk, 'a bulk replay answers the kept results')
  t.equal((await tracker.workItems.get(bob, first.id)).priority, 'low', 'and writes nothing again')
})

t.test('bulk patch shapes', async (t) => {
  const { tracker, project } = await trackerOn(t)
  const { bob } = await project()
  const item = await tracker.workItems.create(bob, { title: 'x' })
  for (const body of [{}, { ids: [item.id] }, { patch: { title: 'y' } }, { ids: [item.id], patch: { title: 'y' }, items: [{ id: item.id, patch: { title: 'z' } }] }]) {
    t.match(await refusal(tracker.workItems.bulkPatch(bob, body)), { status: 400, code: 'APP_TRACKER_INVALID_BULK' })
  }
  const result = await tracker.workItems.bulkPatch(bob, { ids: [item.id], patch: { title: ' ' } })
  t.match(result.results[0], { status: 400, code: 'APP_TRACKER_INVALID_VALUE', message: /body.title: is blank/ })
})

t.test('sync: changes after an instant, oldest first, with tombstones; keys never reused', async (t) => {
  const { tracker, project, clock } = await trackerOn(t)
  const { bob, admin } = await project()
  const a = await tracker.workItems.create(bob, { title: 'a' })
  const b = await tracker.workItems.create(bob, { title: 'b' })
  const since = clock.now().toISOString()
  clock.advance(1000)
  await tracker.workItems.update(bob, b.id, { title: 'b2' })
  clock.advance(1000)
  await tracker.workItems.delete(admin, a.id)
  clock.advance(1000)
  const c = await tracker.workItems.create(bob, { title: 'c', draft: true })
  const page = await tracker.lists.list(bob, { updatedSince: since })
  t.same(page.items.map((entry) => 'deleted' in entry ? ['deleted', entry.key] : ['item', (entry as WorkItemT).key]), [['item', 'WEB-2'], ['deleted', 'WEB-1'], ['item', 'WEB-3']])
  t.match(page.items[1] as WorkItemTombstoneT, { id: a.id, deleted: true, number: 1 })
  t.same((await tracker.lists.list(await tracker.projects.scope(people.carol, 'proj1', bob.project._id), { updatedSince: since })).items.length, 2, 'another member does not get bob\'s draft')
  t.equal(c.number, 3)
  t.match(await refusal(tracker.lists.list(bob, { updatedSince: since, filter: '{"field":"draft","op":"eq","value":true}' })), { status: 400, message: /updatedSince: goes alone/ })
  t.match(await refusal(tracker.workItems.get(bob, a.id)), { status: 404 })
  t.match(await refusal(tracker.workItems.update(bob, a.id, { title: 'back' })), { status: 404 })
})

t.test('numbers counted in process: another process\'s number is skipped, a new process counts on from the highest, a deleted one\'s too', async (t) => {
  const { tracker, project, store, clock } = await trackerOn(t)
  const { bob, admin, lpId } = await project()
  const first = await tracker.workItems.create(bob, { title: 'first' })
  t.equal(first.key, 'WEB-1')
  // Another process over the same store: it learns the highest number and takes the next before this one does.
  const other = new ItemStore(store, { clock, newId: createIdGenerator(() => clock.nowMs()) })
  const taken = await other.nextNumber(lpId)
  t.equal(taken, 2)
  const items = store.collection<Document>('tracker_items')
  const stored = await items.findOne({ _id: first.id }) as Document
  await items.insertOne({ ...stored, _id: 'other-process-item', seq: taken, outbox: null })
  const second = await tracker.workItems.create(bob, { title: 'second' })
  t.equal(second.key, 'WEB-3', 'the refused number is skipped, not answered with an error')
  t.same((await tracker.activity.list(bob, second.id, {})).items.map((entry) => [entry.field, entry.to]), [['created', 'WEB-3']], 'its activity names the number it got')
  t.equal((await tracker.workItems.create(bob, { title: 'third' })).key, 'WEB-4')
  await tracker.workItems.delete(admin, (await tracker.workItems.getByKey(people.bob, 'proj1', 'WEB-4')).id)
  t.equal(await new ItemStore(store, { clock, newId: createIdGenerator() }).nextNumber(lpId), 5, 'a new process counts on from the highest, a tombstone\'s included')
})

t.test('a number another process took moves the count past it, never back onto numbers this process handed out to creates in flight', async (t) => {
  const { tracker, project, store, clock } = await trackerOn(t)
  const { bob, lpId } = await project()
  const first = await tracker.workItems.create(bob, { title: 'first' })
  const items = store.collection<Document>('tracker_items')
  const stored = await items.findOne({ _id: first.id }) as Document
  const mine = new ItemStore(store, { clock, newId: createIdGenerator(() => clock.nowMs()) })
  // Three creates of this process hold 2, 3 and 4 when another process stores 2 first.
  t.same([await mine.nextNumber(lpId), await mine.nextNumber(lpId), await mine.nextNumber(lpId)], [2, 3, 4])
  await items.insertOne({ ...stored, _id: 'other-process-item', seq: 2, outbox: null })
  t.equal(await mine.insert({ ...stored, _id: 'mine-2', seq: 2, outbox: null } as never), 'numberTaken')
  t.equal(await mine.nextNumber(lpId), 5, 'the retry takes a number past the ones in flight, not 3 again')
  t.equal(await mine.insert({ ...stored, _id: 'mine-3', seq: 3, outbox: null } as never), 'inserted', 'the create in flight keeps its number')
})

t.test('roles: guests work on their own items; deletes are for creators and admins; outsiders see nothing', async (t) => {
  const { tracker, project, scope } = await trackerOn(t)
  const { lpId, bob, carol, gina } = await project()
  const bobs = await tracker.workItems.create(bob, { title: 'bob\'s', assigneeIds: ['gina'] })
  const ginas = await tracker.workItems.create(gina, { title: 'gina\'s' })
  t.equal((await tracker.workItems.get(gina, bobs.id)).title, 'bob\'s', 'she sees what she is assigned')
  t.match(await refusal(tracker.workItems.update(gina, bobs.id, { title: 'mine now' })), { status: 403, code: 'APP_TRACKER_GUEST_REFUSED' })
  t.equal((await tracker.workItems.update(gina, ginas.id, { title: 'gina\'s, edited' })).version, 2)
  t.match(await refusal(tracker.workItems.delete(carol, bobs.id)), { status: 403, code: 'APP_TRACKER_NOT_YOURS' })
  t.match(await refusal(tracker.relations.create(gina, ginas.id, { type: 'relates_to', itemId: bobs.id })), { status: 403, code: 'APP_TRACKER_GUEST_REFUSED' })
  const cycle = await tracker.cycles.create(bob, { name: 'Sprint' })
  t.match(await refusal(tracker.workItems.update(gina, ginas.id, { cycleId: cycle.id })), { status: 403, code: 'APP_TRACKER_GUEST_REFUSED' }, 'guests plan nothing')
  await tracker.workItems.update(bob, ginas.id, { cycleId: cycle.id })
  t.equal((await tracker.workItems.update(gina, ginas.id, { title: 'in a cycle, edited' })).cycleId, cycle.id, 'but edit their items that are planned')
  for (const actor of [people.oscar, { userId: 'rita', permissions: [] }]) {
    t.match(await refusal(scope(actor, lpId)), { status: 404, code: 'APP_TRACKER_PROJECT_NOT_FOUND' }, `${actor.userId} without tracker.read`)
  }
  const reader = await scope(people.rita, lpId)
  t.equal(reader.role, 'member', 'a reader of a public project is taken as a member (the routes refuse its writes: tracker.write)')
  const counts = await tracker.lists.count(gina, {})
  t.equal(counts.total, 2, 'counts see what the guest sees')
  await tracker.projects.update(await scope(people.alice, lpId), { guestsSeeAllItems: true, visibility: 'private' })
  t.equal((await tracker.lists.count(await scope(people.gina, lpId), {})).total, 2)
  t.match(await refusal(scope(people.rita, lpId)), { status: 404 }, 'a private project is its members\' alone')
})

t.test('drafts, archive, completedAt, parents and board order', async (t) => {
  const { tracker, project, clock } = await trackerOn(t)
  const { bob, carol, admin } = await project()
  const states = Object.fromEntries((await tracker.states.list(admin, {})).items.map((state) => [state.name, state.id]))
  const draft = await tracker.workItems.create(bob, { title: 'Draft', draft: true })
  t.match(await refusal(tracker.workItems.get(carol, draft.id)), { status: 404 }, 'a draft is its creator\'s')
  t.notOk((await tracker.lists.list(bob, {})).items.some((item) => item.id === draft.id), 'and stays out of lists')
  await tracker.workItems.update(bob, draft.id, { draft: false })
  t.equal((await tracker.workItems.get(carol, draft.id)).draft, false)
  t.match(await refusal(tracker.workItems.update(bob, draft.id, { draft: true } as never)), { status: 400, message: /cannot become a draft again/ })

  t.match(await refusal(tracker.workItems.update(bob, draft.id, { archived: true })), { status: 409, code: 'APP_TRACKER_ARCHIVE_OPEN_ITEM' })
  const done = await tracker.workItems.update(bob, draft.id, { stateId: states.Done })
  t.equal(done.completedAt, clock.now().toISOString())
  clock.advance(DAY)
  t.equal((await tracker.workItems.update(bob, draft.id, { title: 'Still done' })).completedAt, done.completedAt, 'completedAt stays while completed')
  const archived = await tracker.workItems.update(bob, draft.id, { archived: true })
  t.ok(archived.archivedAt)
  t.match(await refusal(tracker.workItems.update(bob, draft.id, { title: 'no' })), { status: 409, code: 'APP_TRACKER_ITEM_ARCHIVED' })
  const reopened = await tracker.workItems.update(bob, draft.id, { archived: false, stateId: states.Todo })
  t.match(reopened, { archivedAt: null, completedAt: null, stateGroup: 'unstarted' })

  const a = await tracker.workItems.create(bob, { title: 'A' })
  const b = await tracker.workItems.create(bob, { title: 'B', parentId: a.id })
  const c = await tracker.workItems.create(bob, { title: 'C', parentId: b.id })
  t.match(await refusal(tracker.workItems.update(bob, a.id, { parentId: c.id })), { status: 409, code: 'APP_TRACKER_PARENT_LOOP' })
  t.match(await refusal(tracker.workItems.update(bob, a.id, { parentId: a.id })), { status: 400, message: /the item itself/ })
  t.match(await refusal(tracker.workItems.update(bob, a.id, { startDate: '2026-03-10', targetDate: '2026-03-01' })), { status: 400, message: /before startDate/ })

  const manual = async () => (await tracker.lists.list(bob, { orderBy: 'manual' })).items.map((item) => (item as WorkItemT).title)
  t.same(await manual(), ['Still done', 'A', 'B', 'C'])
  await tracker.workItems.update(bob, c.id, { position: { before: a.id } })
  await tracker.workItems.update(bob, draft.id, { position: { after: b.id } })
  t.same(await manual(), ['C', 'A', 'B', 'Still done'], 'moved by midpoints')
})

t.test('descriptions, mentions and subscribers', async (t) => {
  const { tracker, project } = await trackerOn(t)
  const { bob, carol, gina } = await project()
  const item = await tracker.workItems.create(bob, { title: 'Rich', description: '# Plan\n**Bold** move, ask <@carol> and <@stranger>; see [the doc](https://example.com).' })
  t.equal(item.descriptionText, 'Plan\nBold move, ask @carol and @stranger; see the doc.')
  const subscribers = async () => (await tracker.activity.subscribers(bob, item.id, {})).items.map((entry) => [entry.userId, entry.reason])
  t.same(await subscribers(), [['bob', 'creator'], ['carol', 'mentioned']], 'the creator and mentioned members; non-members are not subscribed')
  const json = await tracker.workItems.update(bob, item.id, {
    descriptionJson: { type: 'doc', content: [{ type: 'paragraph', content: [{ type: 'text', text: 'Hello ' }, { type: 'mention', attrs: { id: 'gina', label: 'Gina' } }] }, { type: 'paragraph', content: [{ type: 'text', text: 'Bye' }] }] },
    assigneeIds: ['carol']
  })
  t.match(json, { descriptionFormat: 'json', description: null, descriptionText: 'Hello @Gina\nBye' })
  t.same((await subscribers()).map(([userId]) => userId).sort(), ['bob', 'carol'], 'a guest mentioned in an item she cannot see is not subscribed to it')
  await tracker.workItems.update(bob, item.id, { assigneeIds: ['carol', 'gina'] })
  t.same((await subscribers()).map(([userId]) => userId).sort(), ['bob', 'carol', 'gina'], 'once assigned she is')
  t.match(await refusal(tracker.workItems.update(bob, item.id, { description: 'x', descriptionJson: { type: 'doc' } })), { status: 400, message: /not both/ })
  await tracker.activity.subscribe(carol, item.id)
  t.match(await refusal(tracker.activity.subscribe(gina, item.id, 'carol')), { status: 403 })
  await tracker.activity.unsubscribe(carol, item.id)
  t.match(await refusal(tracker.activity.unsubscribe(carol, item.id)), { status: 404, code: 'APP_TRACKER_SUBSCRIBER_NOT_FOUND' })
  t.match(await refusal(tracker.workItems.create(bob, { title: 'x', assigneeIds: ['bob', 'oscar'] })), { status: 400, code: 'APP_TRACKER_NOT_A_MEMBER', details: { fields: [{ path: 'body.assigneeIds[1]' }] } })
})

t.test('cursors page through everything once and refuse to be reused elsewhere', async (t) => {
  const { tracker, project } = await trackerOn(t)
  const { bob } = await project()
  for (let n = 0; n < 23; n++) await tracker.workItems.create(bob, { title: `n${n}`, priority: n % 2 === 0 ? 'high' : 'low' })
  for (const orderBy of ['-number', 'priority', 'manual', '-updatedAt'] as const) {
    const seen: string[] = []
    let cursor: string | undefined
    do {
      const page = await tracker.lists.list(bob, { orderBy, limit: 5, cursor })
      seen.push(...page.items.map((item) => item.id))
      cursor = page.nextCursor ?? undefined
    } while (cursor !== undefined)
    t.equal(new Set(seen).size, 23, `${orderBy}: every item once`)
  }
  const first = await tracker.lists.list(bob, { limit: 5 })
  t.match(await refusal(tracker.lists.list(bob, { limit: 5, cursor: `${first.nextCursor as string}x` })), { status: 400, code: 'APP_INVALID_CURSOR' })
  t.match(await refusal(tracker.lists.list(bob, { limit: 5, cursor: first.nextCursor as string, orderBy: 'priority' })), { status: 400, code: 'APP_INVALID_CURSOR' })
  t.match(await refusal(tracker.lists.list(bob, { limit: 5, cursor: first.nextCursor as string, filter: '{"field":"priority","op":"eq","value":"high"}' })), { status: 400, code: 'APP_INVALID_CURSOR' })
  const grouped = await tracker.lists.count(bob, { groupBy: 'priority' })
  t.same(grouped.groups.filter((group) => group.count > 0), [{ value: 'high', count: 12 }, { value: 'low', count: 11 }])
  t.equal(grouped.total, 23)
  const byAssignee = await tracker.lists.count(bob, { groupBy: 'assignee', filter: '{"field":"priority","op":"eq","value":"high"}' })
  t.same(byAssignee.groups.filter((group) => group.count > 0), [{ value: null, count: 12 }])
})

/** Item writes held until two have come, once `armed`: both re-parentings have made their checks by then. */
function meetingAtItemWrites (control: { armed: boolean }): (store: Store) => Store {
  return (store) => {
    let waiting = 0
    let release = (): void => {}
    const reached = new Promise<void>((resolve) => { release = resolve })
    const wrapped: Store = Object.create(store)
    wrapped.collection = <T extends Document>(name: string): StoreCollection<T> => {
      const inner = store.collection<T>(name)
      if (name !== 'tracker_items') return inner
      const collection: StoreCollection<T> = Object.create(inner)
      collection.findOneAndUpdate = async (...args) => {
        if (control.armed && waiting < 2) {
          if (++waiting === 2) release()
          await reached
        }
        return await inner.findOneAndUpdate(...args)
      }
      return collection
    }
    return wrapped
  }
}

t.test('two re-parentings racing into a loop: the loop never stands', async (t) => {
  const control = { armed: false }
  const { tracker, project } = await trackerOn(t, meetingAtItemWrites(control))
  const { bob, carol } = await project()
  const a = await tracker.workItems.create(bob, { title: 'A' })
  const b = await tracker.workItems.create(bob, { title: 'B' })
  control.armed = true
  const outcomes = await Promise.allSettled([
    tracker.workItems.update(bob, a.id, { parentId: b.id }),
    tracker.workItems.update(carol, b.id, { parentId: a.id })
  ])
  for (const outcome of outcomes) if (outcome.status === 'rejected') t.match(outcome.reason, { status: 409, code: 'APP_TRACKER_PARENT_LOOP' })
  const parents = [(await tracker.workItems.get(bob, a.id)).parentId, (await tracker.workItems.get(bob, b.id)).parentId]
  t.ok(parents.includes(null), `no loop stands (parents ${JSON.stringify(parents)})`)
  t.ok(outcomes.some((outcome) => outcome.status === 'rejected'), 'at least one was refused')
})

t.test('list fields are indexed per element only where the engine can use it: not on the embedded engine, where an older one is dropped', async (t) => {
  const store = await tempStore(t)
  const items = store.collection('tracker_items')
  await items.createIndex({ lpId: 1, assignees: 1, seq: 1 })
  await new ItemStore(store, { clock: new ManualClock(DAY), newId: createIdGenerator() }).init()
  const names = (await items.listIndexes()).map((index) => index.name)
  const listIndexes = ['lpId_1_assignees_1_seq_1', 'lpId_1_labelIds_1_seq_1', 'lpId_1_moduleIds_1_seq_1']
  if (store.engine === 'sqlite') t.same(names.filter((name) => listIndexes.includes(name)), [], 'none on SQLite, the one made before dropped')
  else t.same(listIndexes.filter((name) => names.includes(name)), listIndexes, 'each on MongoDB')
  t.ok(names.includes('lpId_1_stateId_1_seq_1') && names.includes('lpId_1_seq_1'), 'the scalar fields keep theirs')
})

t.test('the sparse references are indexed only where they hold an id; a whole index from before is made again as a partial one', async (t) => {
  const store = await tempStore(t)
  const items = store.collection('tracker_items')
  await items.createIndex({ lpId: 1, cycleId: 1, seq: 1 })
  await new ItemStore(store, { clock: new ManualClock(DAY), newId: createIdGenerator() }).init()
  const partial = Object.fromEntries((await items.listIndexes()).map((index) => [index.name, index.partialFilterExpression ?? null]))
  t.same(partial['lpId_1_cycleId_1_seq_1'], { cycleId: { $gte: '' } }, 'the whole one replaced')
  t.same(partial['lpId_1_parentId_1_seq_1'], { parentId: { $gte: '' } })
  t.same(partial['lpId_1_typeId_1_seq_1'], { typeId: { $gte: '' } })
  t.same(partial['lpId_1_estimatePointId_1'], { estimatePointId: { $gte: '' } })
  t.same(partial['lpId_1_intake.status_1_seq_1'], { 'intake.status': { $gte: '' } })
  t.equal(Object.values(partial).filter((filter) => filter !== null).length, 5, 'the others stay whole')
  t.equal(partial['lpId_1_stateId_1_seq_1'], null)
  const activity = Object.fromEntries((await store.collection('tracker_activity').listIndexes()).map((index) => [index.name, index.partialFilterExpression ?? null]))
  t.same(activity['lpId_1_field_1_from_1'], { from: { $gte: '' } }, 'the activity by former value: only entries with one')
  t.equal(activity['lpId_1_field_1_to_1'], null)
  await new ItemStore(store, { clock: new ManualClock(DAY), newId: createIdGenerator() }).init()
  t.equal((await items.listIndexes()).length, Object.keys(partial).length, 'a second start changes nothing')
})

t.test('two processes starting together on one database both replace a whole index from before: neither fails', async (t) => {
  const store = await tempStore(t)
  const items = store.collection('tracker_items')
  await items.createIndex({ lpId: 1, cycleId: 1, seq: 1 })
  const start = async (): Promise<void> => { await new ItemStore(store, { clock: new ManualClock(DAY), newId: createIdGenerator() }).init() }
  await t.resolves(Promise.all([start(), start()]))
  t.same((await items.listIndexes()).find((index) => index.name === 'lpId_1_cycleId_1_seq_1')?.partialFilterExpression, { cycleId: { $gte: '' } })
})

t.test('a list hands out one frozen view per stored state of an item: renewed by a write, a new identifier, and never across visibility', async (t) => {
  const { tracker, project, scope } = await trackerOn(t)
  const { lpId, bob, gina } = await project()
  const item = await tracker.workItems.create(bob, { title: 'Listed' })
  const first = (await tracker.lists.list(bob, {})).items[0] as WorkItemT
  t.ok(Object.isFrozen(first), 'a view of a shared document is frozen')
  t.equal((await tracker.lists.list(bob, {})).items[0], first, 'the same view while the item is unchanged')
  t.same((await tracker.lists.list(gina, {})).items, [], 'the guest still sees none of it')
  await tracker.workItems.update(bob, item.id, { title: 'Renamed' })
  const changed = (await tracker.lists.list(bob, {})).items[0] as WorkItemT
  t.not(changed, first)
  t.match(changed, { title: 'Renamed', key: 'WEB-1', version: 2 })
  await tracker.projects.update(await scope(people.alice, lpId), { identifier: 'SITE' })
  t.match((await tracker.lists.list(await scope(people.bob, lpId), {})).items[0], { title: 'Renamed', key: 'SITE-1' }, 'the key under the new identifier')
})
