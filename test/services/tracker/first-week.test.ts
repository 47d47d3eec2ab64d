import t from 'tap'
import { refusal } from '../../helper.js'
import type { WorkItemT } from '../../../schemas/tracker-work-items.js'
import { DAY, PROJECT, people, trackerOn } from './fixture.js'

/**
 * A team's first week with the tracker, at the service level: the bars of
 * issue 30 walked in the order a team meets them.
 */
t.test('a team\'s first week', async (t) => {
  const { tracker, clock, scope, project } = await trackerOn(t)
  const { lpId, admin, bob, carol, gina } = await project('WEB', { timezone: 'Europe/Berlin' })

  // Monday: settings. The default workflow, one more state, labels nested one level.
  const states = await tracker.states.list(admin, {})
  t.same(states.items.map((state) => [state.name, state.group, state.default]), [
    ['Backlog', 'backlog', true], ['Todo', 'unstarted', false], ['In Progress', 'started', false], ['Done', 'completed', false], ['Cancelled', 'cancelled', false]
  ], 'five states, triage hidden, Backlog the one default')
  const review = await tracker.states.create(admin, { name: 'In Review', color: '#8b5cf6', group: 'started', sequence: 3500 })
  const byName = Object.fromEntries([...states.items, review].map((state) => [state.name, state.id]))
  const area = await tracker.labels.create(admin, { name: 'area', color: '#111111' })
  const frontend = await tracker.labels.create(admin, { name: 'frontend', color: '#222222', parentId: area.id })
  const bug = await tracker.labels.create(admin, { name: 'bug', color: '#ff0000' })
  t.match(await refusal(tracker.labels.create(admin, { name: 'css', color: '#333333', parentId: frontend.id })), { status: 409, code: 'APP_TRACKER_LABEL_DEPTH' })
  t.match(await refusal(tracker.states.create(bob, { name: 'Nope', color: '#000000', group: 'started' })), { status: 403, code: 'APP_TRACKER_ROLE_REQUIRED' }, 'a member does not configure')

  // 30 items, numbered in order.
  const items: WorkItemT[] = []
  for (let n = 1; n <= 30; n++) {
    items.push(await tracker.workItems.create(n % 3 === 0 ? carol : bob, {
      title: `Item ${n}`,
      priority: (['urgent', 'high', 'medium', 'low', 'none'] as const)[n % 5],
      labelIds: n % 2 === 0 ? [bug.id] : [frontend.id],
      assigneeIds: n % 4 === 0 ? ['bob'] : []
    }))
  }
  t.same(items.map((item) => item.key), Array.from({ length: 30 }, (_, i) => `WEB-${i + 1}`), 'keys WEB-1 … WEB-30')
  t.equal((await tracker.workItems.getByNumber(bob, 17)).title, 'Item 17')
  const byKey = await tracker.projects.scopeOfKey(people.carol, PROJECT, 'web-17')
  t.equal((await tracker.workItems.getByNumber(byKey.scope, byKey.seq)).id, items[16].id, 'a key finds its item, letter case aside')

  // The guest sees only what she made or is given.
  const proposed = await tracker.workItems.create(gina, { title: 'Gina\'s own' })
  await tracker.workItems.update(bob, items[4].id, { assigneeIds: ['gina'] })
  const ginaSees = await tracker.lists.list(gina, { limit: 100 })
  t.same(ginaSees.items.map((item) => item.id).sort(), [proposed.id, items[4].id].sort(), 'a guest lists her own and her assigned items only')
  t.match(await refusal(tracker.workItems.get(gina, items[0].id)), { status: 404, code: 'APP_TRACKER_ITEM_NOT_FOUND' })

  // A cycle for the first two weeks; a second one overlapping it is refused.
  const sprint = await tracker.cycles.create(bob, { name: 'Sprint 1', startDate: '2026-03-02', endDate: '2026-03-13' })
  t.equal(sprint.status, 'current')
  t.match(await refusal(tracker.cycles.create(carol, { name: 'Sprint X', startDate: '2026-03-13', endDate: '2026-03-20' })), { status: 409, code: 'APP_TRACKER_CYCLE_OVERLAP', message: /Sprint 1/ })
  const next = await tracker.cycles.create(carol, { name: 'Sprint 2', startDate: '2026-03-14', endDate: '2026-03-27' })
  t.equal(next.status, 'upcoming')

  // Estimates in points; ten items go into the sprint.
  const points = await tracker.estimates.create(admin, { name: 'Fibonacci', type: 'points', points: ['1', '2', '3', '5', '8'] })
  await tracker.projects.update(admin, { estimateId: points.id })
  const sized = await scope(people.bob, lpId)
  const sprintItems = items.slice(0, 10)
  const added = await tracker.flows.addToCycle(sized, sprint.id, sprintItems.map((item) => item.id))
  t.equal(added.patched, 10)
  for (const [index, item] of sprintItems.entries()) await tracker.workItems.update(sized, item.id, { estimatePointId: points.points[index % 5].id })
  // Monday: two items done (1 + 2 points).
  for (const item of sprintItems.slice(0, 2)) await tracker.workItems.update(sized, item.id, { stateId: byName.Done })
  clock.advance(DAY)
  // Tuesday: three more done (3 + 5 + 8), one item joins (1 point).
  for (const item of sprintItems.slice(2, 5)) await tracker.workItems.update(sized, item.id, { stateId: byName.Done })
  await tracker.workItems.update(sized, items[10].id, { cycleId: sprint.id, estimatePointId: points.points[0].id })
  clock.advance(DAY)
  const burndown = await tracker.cycles.burndown(sized, sprint.id, 'points')
  t.same(burndown.days.map((day) => day.date), ['2026-03-02', '2026-03-03', '2026-03-04'], 'one day per day so far')
  t.same(burndown.days.map((day) => [day.scope, day.completed, day.remaining, day.added]), [[38, 3, 35, 38], [39, 19, 20, 1], [39, 19, 20, 0]])
  t.same(burndown.days.map((day) => day.ideal), [38, 34.545, 31.091], 'the ideal line falls from the first day\'s scope to 0 on 13 March')
  const counted = await tracker.cycles.burndown(sized, sprint.id)
  t.same(counted.days.map((day) => [day.scope, day.completed]), [[10, 2], [11, 5], [11, 5]], 'or counted in items')

  // A module with a lead, members and a link.
  const checkout = await tracker.modules.create(bob, { name: 'Checkout', leadId: 'bob', memberIds: ['bob', 'carol'], status: 'planned', links: [{ url: 'https://example.com/spec', title: 'Spec' }] })
  const joined = await tracker.flows.setModuleItems(bob, checkout.id, { add: [items[11].id, items[12].id, items[13].id] })
  t.equal(joined.patched, 3)
  t.equal((await tracker.modules.get(bob, checkout.id)).progress.total, 3)

  // Relations, seen from both sides; the same pair again (either way round) and an item with itself are refused.
  await tracker.relations.create(bob, items[0].id, { type: 'blocking', itemId: items[1].id })
  t.same((await tracker.relations.list(bob, items[0].id, {})).items.map((relation) => [relation.type, relation.key]), [['blocking', 'WEB-2']])
  t.same((await tracker.relations.list(carol, items[1].id, {})).items.map((relation) => [relation.type, relation.key]), [['blocked_by', 'WEB-1']])
  t.match(await refusal(tracker.relations.create(carol, items[1].id, { type: 'relates_to', itemId: items[0].id })), { status: 409, code: 'APP_TRACKER_RELATION_EXISTS', message: /blocked_by/ })
  t.match(await refusal(tracker.relations.create(carol, items[1].id, { type: 'relates_to', itemId: items[1].id })), { status: 400, code: 'APP_TRACKER_RELATION_SELF' })

  // A page: alice's edits within minutes are one version, bob's edit closes it, a restore brings hers back.
  const page = await tracker.pages.create(admin, { title: 'Spec', content: 'v1' })
  clock.advance(60_000)
  await tracker.pages.update(admin, page.id, { content: 'v1, polished' })
  clock.advance(10 * 60_000)
  await tracker.pages.update(bob, page.id, { content: 'v2 by bob' })
  const versions = await tracker.pages.listVersions(bob, page.id, {})
  t.same(versions.items.map((version) => [version.content, version.authorId, version.current]), [['v2 by bob', 'bob', true], ['v1, polished', 'alice', false]], 'two versions')
  const restored = await tracker.pages.restore(carol, page.id, versions.items[1].id)
  t.equal(restored.content, 'v1, polished')
  t.same((await tracker.pages.listVersions(bob, page.id, {})).items.map((version) => version.content), ['v1, polished', 'v2 by bob', 'v1, polished'], 'the restore kept what it replaced')

  // Intake: the guest proposes, a member accepts, the item leaves triage.
  await tracker.projects.update(await scope(people.alice, lpId), { features: { intake: true } })
  const withIntake = await scope(people.gina, lpId)
  const request = await tracker.intake.create(withIntake, { title: 'Dark mode please' })
  t.equal(request.stateGroup, 'triage')
  t.equal(request.intake?.status, 'pending')
  const triager = await scope(people.bob, lpId)
  t.notOk((await tracker.lists.list(triager, { limit: 200 })).items.some((item) => item.id === request.id), 'intake waits outside the lists')
  const accepted = await tracker.intake.decide(triager, request.id, { status: 'accepted' })
  t.match(accepted, { stateId: byName.Backlog, stateGroup: 'backlog', intake: { status: 'accepted', decidedBy: 'bob' } })
  t.ok((await tracker.lists.list(triager, { limit: 200 })).items.some((item) => item.id === request.id), 'and once accepted it is an item like any other')
  t.match(await refusal(tracker.intake.decide(triager, request.id, { status: 'declined' })), { status: 409, code: 'APP_TRACKER_INTAKE_DECIDED' })

  // A view saved and applied again later.
  const view = await tracker.views.create(bob, { name: 'Mine, urgent first', filter: { and: [{ field: 'assignee', op: 'eq', value: 'me' }, { field: 'priority', op: 'in', value: ['urgent', 'high', 'low'] }] }, orderBy: 'priority', layout: 'kanban', groupBy: 'state' })
  const mine = async () => (await tracker.lists.list(bob, { viewId: view.id, limit: 100 })).items.map((item) => (item as WorkItemT).key)
  t.same(await mine(), ['WEB-20', 'WEB-16', 'WEB-28', 'WEB-8'], 'urgent, high, low; newest first within one priority')
  await tracker.workItems.update(bob, items[0].id, { assigneeIds: ['bob'] })
  t.same(await mine(), ['WEB-20', 'WEB-16', 'WEB-1', 'WEB-28', 'WEB-8'], 'the same view, applied again, follows the items')

  // A bulk patch with mixed results: patched, unknown, stale version, archived.
  await tracker.workItems.update(bob, items[29].id, { stateId: byName.Done })
  await tracker.workItems.update(bob, items[29].id, { archived: true })
  const current = await tracker.workItems.get(bob, items[20].id)
  const bulk = await tracker.workItems.bulkPatch(bob, {
    items: [
      { id: items[18].id, patch: { priority: 'urgent' } },
      { id: 'no-such-item', patch: { priority: 'urgent' } },
      { id: items[20].id, version: current.version - 1, patch: { priority: 'urgent' } },
      { id: items[29].id, patch: { priority: 'urgent' } },
      { id: items[21].id, version: (await tracker.workItems.get(bob, items[21].id)).version, patch: { priority: 'urgent' } }
    ]
  })
  t.same(bulk.results.map((result) => [result.status, result.code]), [[200, null], [404, 'APP_TRACKER_ITEM_NOT_FOUND'], [412, 'APP_TRACKER_VERSION_MISMATCH'], [409, 'APP_TRACKER_ITEM_ARCHIVED'], [200, null]])
  t.same([bulk.patched, bulk.failed], [2, 3])
  t.equal((await tracker.workItems.get(bob, items[20].id)).version, current.version, 'a refused item is untouched')
  for (const id of [items[18].id, items[21].id]) {
    const entries = (await tracker.activity.list(bob, id, {})).items.filter((entry) => entry.to === 'urgent')
    t.equal(entries.length, 1, 'one activity entry per patched item')
  }

  // An item deleted: its key answers 404 and is never given again.
  await tracker.workItems.delete(bob, items[28].id)
  t.match(await refusal(tracker.workItems.getByNumber(bob, 29)), { status: 404 })
  const after = await tracker.workItems.create(bob, { title: 'After the delete' })
  t.equal(after.key, 'WEB-33', 'numbers keep counting (31 was Gina\'s, 32 the intake item)')

  // A month and a half on: the daily automation closes stale open items and archives old closed ones, once.
  await tracker.projects.setAutomation(await scope(people.alice, lpId), { autoCloseMonths: 1, autoArchiveMonths: 1 })
  clock.advance(45 * DAY)
  const run = await tracker.automations.runDaily()
  t.ok(run.closed > 0 && run.archived > 0, `closed ${run.closed}, archived ${run.archived}`)
  const closedItem = await tracker.workItems.get(bob, items[25].id)
  t.equal(closedItem.stateGroup, 'cancelled')
  const automated = (await tracker.activity.list(bob, items[25].id, {})).items.filter((entry) => entry.automation)
  t.same(automated.map((entry) => [entry.field, entry.actorId]), [['state', 'automation'], ['stateGroup', 'automation']])
  const archivedDone = await tracker.lists.list(bob, { filter: JSON.stringify({ field: 'archived', op: 'eq', value: true }), limit: 100 })
  t.ok(archivedDone.items.some((item) => item.id === sprintItems[0].id), 'items done in week one are archived')
  t.same(await tracker.automations.runDaily(), { projects: 1, closed: 0, archived: 0, keysForgotten: 0 }, 'a second run the same day changes nothing')
})
