import t from 'tap'
import type { Document, Store, StoreCollection } from '../../../services/store/types.js'
import { refusal } from '../../helper.js'
import { PROJECT, people, trackerOn } from './fixture.js'

t.test('identifiers: upper case, unique in the platform project, renames keep old keys', async (t) => {
  const { tracker, project, scope } = await trackerOn(t)
  const { lpId, bob } = await project('web')
  t.equal((await tracker.projects.get(bob)).identifier, 'WEB')
  const item = await tracker.workItems.create(bob, { title: 'Keyed' })
  t.match(await refusal(tracker.projects.create(people.alice, PROJECT, { name: 'Other', identifier: 'Web' })), { status: 409, code: 'APP_TRACKER_IDENTIFIER_TAKEN' })
  for (const identifier of ['1ABC', 'TOO-LONG', 'ABCDEFGHIJKLM']) {
    t.match(await refusal(tracker.projects.create(people.alice, PROJECT, { name: 'Bad', identifier })), { status: 400, code: 'APP_TRACKER_INVALID_IDENTIFIER' }, identifier)
  }
  const renamed = await tracker.projects.update(await scope(people.alice, lpId), { identifier: 'SITE' })
  t.same([renamed.identifier, renamed.formerIdentifiers], ['SITE', ['WEB']])
  t.equal((await tracker.workItems.get(await scope(people.bob, lpId), item.id)).key, 'SITE-1')
  const old = await tracker.projects.scopeOfKey(people.bob, PROJECT, 'WEB-1')
  t.equal((await tracker.workItems.getByNumber(old.scope, old.seq)).key, 'SITE-1', 'the old key still finds the item, under its new key')
  t.match(await refusal(tracker.projects.create(people.alice, PROJECT, { name: 'Squatter', identifier: 'WEB' })), { status: 409, code: 'APP_TRACKER_IDENTIFIER_TAKEN' }, 'a former identifier stays its project\'s')
  const other = await tracker.projects.create(people.alice, PROJECT, { name: 'Other', identifier: 'APP' })
  t.match(await refusal(tracker.projects.update(await scope(people.alice, other.id), { identifier: 'web' })), { status: 409, code: 'APP_TRACKER_IDENTIFIER_TAKEN' })
  t.ok(await tracker.projects.update(await scope(people.alice, lpId), { identifier: 'WEB' }), 'going back to a former identifier is fine')
  t.match(await refusal(tracker.projects.scopeOfKey(people.bob, PROJECT, 'WEB-x')), { status: 400, code: 'APP_TRACKER_INVALID_KEY' })
  t.match(await refusal(tracker.projects.scopeOfKey(people.bob, PROJECT, 'NOPE-1')), { status: 404 })
  t.match(await refusal(tracker.projects.create(people.alice, 'proj2', { name: 'Elsewhere', identifier: 'WEB', timezone: 'Mars/Olympus' })), { status: 400, code: 'APP_TRACKER_INVALID_TIMEZONE' })
  t.ok(await tracker.projects.create(people.alice, 'proj2', { name: 'Elsewhere', identifier: 'WEB' }), 'another platform project has identifiers of its own')
})

t.test('project lifecycle: list by visibility, archive makes read-only, delete purges', async (t) => {
  const { tracker, project, scope, store, runFollowUps } = await trackerOn(t)
  const open = await project('OPEN')
  const secret = await tracker.projects.create(people.alice, PROJECT, { name: 'Secret', identifier: 'SEC', visibility: 'private' })
  t.same((await tracker.projects.list(people.rita, PROJECT, {})).items.map((lp) => lp.identifier), ['OPEN'], 'a reader lists public projects')
  t.same((await tracker.projects.list(people.alice, PROJECT, {})).items.map((lp) => lp.identifier), ['OPEN', 'SEC'])
  t.same((await tracker.projects.list(people.oscar, PROJECT, {})).items, [])
  t.match(await refusal(tracker.projects.update(open.bob, { name: 'x' })), { status: 403, code: 'APP_TRACKER_ROLE_REQUIRED' })
  await tracker.members.add(await scope(people.alice, secret.id), { userId: 'rita', role: 'member' })
  t.same((await tracker.projects.list(people.rita, PROJECT, {})).items.map((lp) => [lp.identifier, lp.role]), [['OPEN', 'member'], ['SEC', 'member']])
  t.match(await refusal(tracker.members.add(await scope(people.alice, secret.id), { userId: 'oscar', role: 'member' })), { status: 400, code: 'APP_TRACKER_NOT_A_MEMBER' })
  t.match(await refusal(tracker.members.add(await scope(people.alice, secret.id), { userId: 'rita', role: 'guest' })), { status: 409, code: 'APP_TRACKER_ALREADY_MEMBER' })

  const item = await tracker.workItems.create(open.bob, { title: 'Before' })
  await tracker.projects.archive(await scope(people.alice, open.lpId))
  const archived = await scope(people.bob, open.lpId)
  t.match(await refusal(tracker.workItems.update(archived, item.id, { title: 'After' })), { status: 409, code: 'APP_TRACKER_PROJECT_ARCHIVED' })
  t.equal((await tracker.workItems.get(archived, item.id)).title, 'Before', 'still readable')
  t.same((await tracker.projects.list(people.alice, PROJECT, { archived: true })).items.map((lp) => lp.identifier), ['OPEN'])
  await tracker.projects.restore(await scope(people.alice, open.lpId))

  const page = await tracker.pages.create(await scope(people.bob, open.lpId), { title: 'Doc', content: 'x' })
  await tracker.comments.create(await scope(people.bob, open.lpId), item.id, { body: 'a comment' })
  t.ok(page)
  await tracker.projects.delete(await scope(people.alice, open.lpId))
  t.match(await refusal(scope(people.alice, open.lpId)), { status: 404 })
  for (const name of ['tracker_items', 'tracker_states', 'tracker_pages', 'tracker_comments', 'tracker_members', 'tracker_activity']) {
    t.equal(await store.collection(name).countDocuments({ lpId: open.lpId }), 0, `${name} purged`)
  }
  t.ok(await tracker.projects.create(people.alice, PROJECT, { name: 'Reborn', identifier: 'OPEN' }), 'a deleted project\'s identifiers are free again')
  await runFollowUps()
  await tracker.projects.deleteAllForProject(PROJECT)
  t.equal(await store.collection('tracker_projects').countDocuments({ projectId: PROJECT }), 0)
})

/** A Store on which item writes fail once `armed` is set: a multi-step delete cut short half-way. */
function failingItemWrites (control: { armed: number }): (store: Store) => Store {
  return (store) => {
    const wrapped: Store = Object.create(store)
    wrapped.collection = <T extends Document>(name: string): StoreCollection<T> => {
      const inner = store.collection<T>(name)
      if (name !== 'tracker_items') return inner
      const collection: StoreCollection<T> = Object.create(inner)
      collection.findOneAndUpdate = async (...args) => {
        if (control.armed > 0 && --control.armed === 0) throw new Error('the process died here')
        return await inner.findOneAndUpdate(...args)
      }
      return collection
    }
    return wrapped
  }
}

t.test('states: one default, group fixed, deleted with a target; a delete cut short is finished by its follow-up', async (t) => {
  const control = { armed: 0 }
  const { tracker, project, scope, runFollowUps } = await trackerOn(t, failingItemWrites(control))
  const { lpId, admin, bob } = await project()
  const states = Object.fromEntries((await tracker.states.list(admin, {})).items.map((state) => [state.name, state.id]))
  const doing = await tracker.states.create(admin, { name: 'Doing', color: '#123456', group: 'started', default: true })
  t.same((await tracker.states.list(await scope(people.alice, lpId), {})).items.filter((state) => state.default).map((state) => state.name), ['Doing'], 'making one the default unmakes the other')
  t.match(await refusal(tracker.states.create(await scope(people.alice, lpId), { name: 'doing', color: '#123456', group: 'started' })), { status: 409, code: 'APP_TRACKER_NAME_TAKEN' })
  const items = []
  for (let n = 0; n < 4; n++) items.push(await tracker.workItems.create(await scope(people.bob, lpId), { title: `i${n}` }))
  t.equal(items[0].stateId, doing.id, 'new items start in the default')
  await tracker.workItems.update(bob, items[3].id, { stateId: states.Done })
  await tracker.workItems.update(bob, items[3].id, { archived: true })
  await tracker.workItems.update(bob, items[2].id, { stateId: doing.id })
  const fresh = await scope(people.alice, lpId)
  t.match(await refusal(tracker.flows.deleteState(fresh, doing.id)), { status: 409, code: 'APP_TRACKER_STATE_IN_USE', message: /is the default/ })
  t.match(await refusal(tracker.flows.deleteState(fresh, doing.id, doing.id)), { status: 400 })
  const triage = (await tracker.states.list(fresh, { includeTriage: true })).items.find((state) => state.group === 'triage')
  t.match(await refusal(tracker.flows.deleteState(fresh, triage?.id as string, states.Backlog)), { status: 409, code: 'APP_TRACKER_STATE_GROUP_FIXED' })

  control.armed = 2
  await t.rejects(tracker.flows.deleteState(fresh, doing.id, states['In Progress']), /died here/)
  t.equal(await tracker.lists.count(await scope(people.bob, lpId), { filter: JSON.stringify({ field: 'state', op: 'eq', value: doing.id }) }).then((count) => count.total), 2, 'cut short: one item moved, two left')
  t.match(await refusal(tracker.workItems.update(await scope(people.bob, lpId), items[0].id, { stateId: doing.id })), { status: 400, message: /not a state/ }, 'a state being deleted takes no new items')
  await runFollowUps()
  const after = await scope(people.bob, lpId)
  t.equal(after.project.defaultStateId, states['In Progress'], 'the default went to the target')
  t.same((await tracker.lists.list(after, { limit: 10 })).items.map((item) => 'stateId' in item ? item.stateId : null), Array(3).fill(states['In Progress']))
  t.match(await refusal(tracker.states.get(after, doing.id)), { status: 404 })
  const moved = (await tracker.activity.list(after, items[0].id, {})).items.filter((entry) => entry.field === 'state')
  t.same(moved.map((entry) => [entry.to, entry.automation]), [[states['In Progress'], true]], 'one automation entry for the move')
  t.equal(moved.length, 1)
  t.equal(after.project.defaultStateId, states['In Progress'])
  await tracker.flows.deleteState(await scope(people.alice, lpId), states.Done, states.Cancelled)
  const archived = (await tracker.lists.list(after, { filter: JSON.stringify({ field: 'archived', op: 'eq', value: true }) })).items[0]
  t.match(archived, { id: items[3].id, stateId: states.Cancelled, stateGroup: 'cancelled', completedAt: null }, 'archived items move too, completedAt following the group')
  t.ok('archivedAt' in archived && archived.archivedAt !== null)
  t.same((await tracker.activity.list(after, items[3].id, {})).items.filter((entry) => entry.field === 'stateGroup').map((entry) => [entry.from, entry.to]), [['started', 'completed'], ['completed', 'cancelled']])
  await tracker.flows.deleteState(await scope(people.alice, lpId), states.Todo)
  t.same((await tracker.states.list(after, {})).items.map((state) => state.name), ['Backlog', 'In Progress', 'Cancelled'], 'an empty state goes without a target')
})

t.test('labels: nesting one level, renaming, deleting lets items go', async (t) => {
  const { tracker, project } = await trackerOn(t)
  const { admin, bob } = await project()
  const parent = await tracker.labels.create(admin, { name: 'Area', color: '#000000' })
  const child = await tracker.labels.create(admin, { name: 'Frontend', color: '#000000', parentId: parent.id })
  const other = await tracker.labels.create(admin, { name: 'Other', color: '#000000' })
  t.match(await refusal(tracker.labels.update(admin, parent.id, { parentId: other.id })), { status: 409, code: 'APP_TRACKER_LABEL_DEPTH', message: /has children/ })
  t.match(await refusal(tracker.labels.update(admin, other.id, { parentId: child.id })), { status: 409, code: 'APP_TRACKER_LABEL_DEPTH', message: /itself a child/ })
  t.match(await refusal(tracker.labels.create(admin, { name: 'area', color: '#000000' })), { status: 409, code: 'APP_TRACKER_NAME_TAKEN' })
  const item = await tracker.workItems.create(bob, { title: 'labelled', labelIds: [child.id, other.id] })
  t.match(await refusal(tracker.workItems.create(bob, { title: 'x', labelIds: ['nope'] })), { status: 400, details: { fields: [{ path: 'body.labelIds[0]' }] } })
  await tracker.labels.delete(admin, parent.id)
  t.equal((await tracker.labels.get(admin, child.id)).parentId, null, 'children become top-level')
  await tracker.labels.delete(admin, child.id)
  t.same((await tracker.workItems.get(bob, item.id)).labelIds, [other.id])
})

t.test('estimates and issue types', async (t) => {
  const { tracker, project, scope } = await trackerOn(t)
  const { lpId, admin, bob } = await project()
  t.match(await refusal(tracker.estimates.create(admin, { name: 'Bad', type: 'points', points: ['1', 'two'] })), { status: 400, details: { fields: [{ path: 'body.points[1]' }] } })
  const sizes = await tracker.estimates.create(admin, { name: 'Sizes', type: 'categories', points: ['S', 'M', 'L'] })
  const points = await tracker.estimates.create(admin, { name: 'Points', type: 'points', points: ['1', '2', '3'] })
  await tracker.projects.update(admin, { estimateId: points.id })
  const withPoints = await scope(people.bob, lpId)
  const item = await tracker.workItems.create(withPoints, { title: 'sized', estimatePointId: points.points[2].id })
  t.equal(item.estimate, 3)
  t.match(await refusal(tracker.workItems.update(withPoints, item.id, { estimatePointId: sizes.points[0].id })), { status: 400, message: /estimate system/ })
  t.match(await refusal(tracker.estimates.update(await scope(people.alice, lpId), points.id, { points: [{ id: points.points[0].id, value: '1' }, { id: points.points[1].id, value: '2' }] })), { status: 409, code: 'APP_TRACKER_IN_USE' }, 'a used point cannot go')
  t.match(await refusal(tracker.estimates.update(await scope(people.alice, lpId), points.id, { points: points.points.map((point) => ({ id: point.id, value: point.value === '3' ? '5' : point.value })) })), { status: 409 }, 'nor change its number')
  const renamed = await tracker.estimates.update(await scope(people.alice, lpId), points.id, { points: [...points.points.map((point) => ({ id: point.id, value: point.value })), { value: '8' }] })
  t.equal(renamed.points.length, 4)
  t.match(await refusal(tracker.estimates.delete(await scope(people.alice, lpId), points.id)), { status: 409 })
  await tracker.projects.update(await scope(people.alice, lpId), { estimateId: sizes.id })
  t.match(await tracker.workItems.get(bob, item.id), { estimatePointId: null, estimate: null }, 'switching systems clears the old points')

  const bug = await tracker.issueTypes.create(admin, { name: 'Bug' })
  const typed = await tracker.workItems.create(bob, { title: 'typed', typeId: bug.id })
  t.match(await refusal(tracker.issueTypes.delete(admin, bug.id)), { status: 409, code: 'APP_TRACKER_IN_USE', details: { count: 1 } })
  await tracker.issueTypes.update(admin, bug.id, { active: false })
  t.match(await refusal(tracker.workItems.create(bob, { title: 'x', typeId: bug.id })), { status: 400, message: /inactive/ })
  await tracker.workItems.update(bob, typed.id, { typeId: null })
  await tracker.issueTypes.delete(admin, bug.id)
  t.same((await tracker.issueTypes.list(admin, {})).items, [])
})
