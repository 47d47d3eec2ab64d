import t from 'tap'
import { TRACKER_DAILY_JOB } from '../../../services/tracker/index.js'
import { trackerSetup } from './fixtures.js'

const day = (offset: number): string => new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10)

/**
 * A team's first week through the HTTP API, the bars of issue 30 in the
 * order a team meets them. The service tests walk the same week with a
 * manual clock (test/services/tracker/first-week.test.ts); here every step
 * is a request as a client sends it.
 */
t.test('a team\'s first week, through the routes', async (t) => {
  const { owner, member, viewer, guest, base, lp, api, must, app } = await trackerSetup(t)
  const admin = owner.auth
  const bob = member.auth

  // Settings: the default workflow, one state more, labels one level deep.
  const states = await must('GET', `${lp}/states`, viewer.auth)
  t.same(states.items.map((state: { name: string }) => state.name), ['Backlog', 'Todo', 'In Progress', 'Done', 'Cancelled'])
  const byName = Object.fromEntries(states.items.map((state: { name: string, id: string }) => [state.name, state.id]))
  const review = await api('POST', `${lp}/states`, admin, { name: 'In Review', color: '#8b5cf6', group: 'started', sequence: 3500 })
  t.equal(review.status, 201)
  t.equal(review.headers.location, `${lp}/states/${review.body.data.id as string}`)
  const area = await must('POST', `${lp}/labels`, admin, { name: 'area', color: '#111111' })
  const frontend = await must('POST', `${lp}/labels`, admin, { name: 'frontend', color: '#222222', parentId: area.id })
  const bug = await must('POST', `${lp}/labels`, admin, { name: 'bug', color: '#ff0000' })
  t.same((await api('POST', `${lp}/labels`, admin, { name: 'css', color: '#333333', parentId: frontend.id })).body.code, 'APP_TRACKER_LABEL_DEPTH')

  // Thirty items with keys WEB-1 … WEB-30.
  const items: Array<{ id: string, key: string, version: number }> = []
  for (let n = 1; n <= 30; n++) {
    items.push(await must('POST', `${lp}/work-items`, bob, {
      title: `Item ${n}`,
      priority: (['urgent', 'high', 'medium', 'low', 'none'] as const)[n % 5],
      labelIds: [n % 2 === 0 ? bug.id : frontend.id],
      assigneeIds: n % 4 === 0 ? [member.id] : []
    }))
  }
  t.same(items.map((item) => item.key), Array.from({ length: 30 }, (_, i) => `WEB-${i + 1}`))
  t.equal((await must('GET', `${base}/browse/web-17`, viewer.auth)).id, items[16].id, 'a key finds its item, letter case aside')

  // A cycle around today with a burndown; a second one sharing a day is refused, also when two creates race.
  const sprint = await must('POST', `${lp}/cycles`, bob, { name: 'Sprint 1', startDate: day(-1), endDate: day(12) })
  t.equal(sprint.status, 'current')
  t.same((await api('POST', `${lp}/cycles`, bob, { name: 'X', startDate: day(12), endDate: day(20) })).body.code, 'APP_TRACKER_CYCLE_OVERLAP')
  const racing = await Promise.all([
    api('POST', `${lp}/cycles`, bob, { name: 'Race A', startDate: day(30), endDate: day(40) }),
    api('POST', `${lp}/cycles`, admin, { name: 'Race B', startDate: day(35), endDate: day(45) })
  ])
  t.same(racing.map((res) => res.status).sort(), [201, 409], 'of two racing overlapping creates one wins')
  const points = await must('POST', `${lp}/estimates`, admin, { name: 'Fibonacci', type: 'points', points: ['1', '2', '3', '5', '8'] })
  await must('PATCH', `${lp}`, admin, { estimateId: points.id })
  const added = await must('POST', `${lp}/cycles/${sprint.id as string}/work-items`, bob, { itemIds: items.slice(0, 10).map((item) => item.id) })
  t.same([added.patched, added.failed], [10, 0])
  for (const [index, item] of items.slice(0, 10).entries()) {
    await must('PATCH', `${lp}/work-items/${item.id}`, bob, { estimatePointId: points.points[index % 5].id, ...(index < 3 ? { stateId: byName.Done } : {}) })
  }
  const burndown = await must('GET', `${lp}/cycles/${sprint.id as string}/burndown?unit=points`, viewer.auth)
  t.equal(burndown.days[0].date, day(-1))
  t.match(burndown.days.at(-1), { scope: 38, completed: 6, remaining: 32 }, 'today: 38 points in scope, 1 + 2 + 3 done')
  t.equal(burndown.days[0].ideal, burndown.days[0].scope, 'the ideal line starts at the first day\'s scope')
  t.same((await must('GET', `${lp}/cycles/${sprint.id as string}/work-items?limit=50`, viewer.auth)).items.length, 10)

  // A module; relations seen from both sides.
  const checkout = await must('POST', `${lp}/modules`, bob, { name: 'Checkout', leadId: member.id, status: 'planned' })
  t.equal((await must('POST', `${lp}/modules/${checkout.id as string}/work-items`, bob, { add: [items[11].id, items[12].id] })).patched, 2)
  t.equal((await must('GET', `${lp}/modules/${checkout.id as string}`, viewer.auth)).progress.total, 2)
  await must('POST', `${lp}/work-items/${items[0].id}/relations`, bob, { type: 'blocking', itemId: items[1].id })
  const fromBlocker = await must('GET', `${lp}/work-items/${items[0].id}/relations`, viewer.auth)
  const fromBlocked = await must('GET', `${lp}/work-items/${items[1].id}/relations`, viewer.auth)
  t.same([fromBlocker.items[0].type, fromBlocker.items[0].key, fromBlocked.items[0].type, fromBlocked.items[0].key], ['blocking', 'WEB-2', 'blocked_by', 'WEB-1'])

  // A page with two versions and a restore.
  const page = await must('POST', `${lp}/pages`, admin, { title: 'Spec', content: 'v1 by the owner' })
  await must('PATCH', `${lp}/pages/${page.id as string}`, bob, { content: 'v2 by bob' })
  const versions = await must('GET', `${lp}/pages/${page.id as string}/versions`, viewer.auth)
  t.same(versions.items.map((version: { content: string, current: boolean }) => [version.content, version.current]), [['v2 by bob', true], ['v1 by the owner', false]])
  const restored = await api('POST', `${lp}/pages/${page.id as string}/versions/${versions.items[1].id as string}/restore`, bob)
  t.same([restored.status, restored.body.data.content, restored.headers.etag], [200, 'v1 by the owner', `"${restored.body.data.version as number}"`])

  // Intake: the guest proposes, a member accepts, the item leaves triage.
  await must('PATCH', `${lp}`, admin, { features: { intake: true } })
  const proposal = await must('POST', `${lp}/intake`, guest.auth, { title: 'Dark mode please' })
  t.same([proposal.stateGroup, proposal.intake.status], ['triage', 'pending'])
  const accepted = await must('PATCH', `${lp}/intake/${proposal.id as string}`, bob, { status: 'accepted' })
  t.same([accepted.stateId, accepted.intake.status], [byName.Backlog, 'accepted'])

  // A view saved and applied again as the items change.
  const view = await must('POST', `${lp}/views`, bob, {
    name: 'Mine, urgent first', filter: { and: [{ field: 'assignee', op: 'eq', value: 'me' }, { field: 'priority', op: 'in', value: ['urgent', 'high', 'low'] }] }, orderBy: 'priority'
  })
  const mine = async () => (await must('GET', `${lp}/work-items?viewId=${view.id as string}`, bob)).items.map((item: { key: string }) => item.key)
  t.same(await mine(), ['WEB-20', 'WEB-16', 'WEB-28', 'WEB-8'])
  await must('PATCH', `${lp}/work-items/${items[0].id}`, bob, { assigneeIds: [member.id] })
  t.same(await mine(), ['WEB-20', 'WEB-16', 'WEB-1', 'WEB-28', 'WEB-8'], 'the same view follows the items')

  // A bulk patch with mixed results, one activity entry per patched item.
  const current = await must('GET', `${lp}/work-items/${items[20].id}`, bob)
  const bulk = await must('PATCH', `${lp}/work-items`, bob, {
    items: [
      { id: items[18].id, patch: { priority: 'urgent' } },
      { id: 'no-such-item', patch: { priority: 'urgent' } },
      { id: items[20].id, version: current.version + 1, patch: { priority: 'urgent' } }
    ]
  })
  t.same(bulk.results.map((result: { status: number, code: string | null }) => [result.status, result.code]), [[200, null], [404, 'APP_TRACKER_ITEM_NOT_FOUND'], [412, 'APP_TRACKER_VERSION_MISMATCH']])
  const activity = await must('GET', `${lp}/work-items/${items[18].id}/activity`, viewer.auth)
  t.equal(activity.items.filter((entry: { field: string, to: unknown }) => entry.field === 'priority' && entry.to === 'urgent').length, 1)

  // An item deleted: its key answers 404 and is never given again.
  t.equal((await api('DELETE', `${lp}/work-items/${items[28].id}`, bob)).status, 200)
  t.same((await api('GET', `${base}/browse/WEB-29`, bob)).body.code, 'APP_TRACKER_ITEM_NOT_FOUND')
  t.equal((await must('POST', `${lp}/work-items`, bob, { title: 'After the delete' })).key, 'WEB-32', 'numbers keep counting (31 was the intake item)')

  // Automations: switched on by an admin, run by the daily job (the service tests move the clock to see them act).
  t.same(await must('PATCH', `${lp}/automations`, admin, { autoCloseMonths: 1, autoArchiveMonths: 2 }), { autoCloseMonths: 1, autoArchiveMonths: 2, autoCloseStateId: null })
  t.same(await app.tracker.automations.runDaily(), { projects: 1, closed: 0, archived: 0, keysForgotten: 0 }, 'nothing is a month old yet')
  t.ok(await app.jobs.jobs.findOne({ type: TRACKER_DAILY_JOB }), 'the daily run is a recurring job on the queue')
})
