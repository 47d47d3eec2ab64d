import t from 'tap'
import { bucketOf } from '../../../services/tracker/analytics.js'
import { TRACKER_COLLECTIONS, type ItemRecord } from '../../../services/tracker/records.js'
import { trackerSetup } from './fixtures.js'

/** Analytics through the route: counts and point sums by a dimension, a segment, date buckets, the filter and visibility. */
t.test('counts and point sums by dimension and segment, under the filter grammar and the caller\'s visibility', async (t) => {
  const { app, base, lp, lpId, owner, member, guest, outsider, must, api } = await trackerSetup(t)
  const analytics = `${base}/analytics`
  const points = await must('POST', `${lp}/estimates`, owner.auth, { name: 'Points', type: 'points', points: ['1', '2', '3', '5'] })
  await must('PATCH', lp, owner.auth, { estimateId: points.id, timezone: 'Europe/Berlin' })
  const bug = await must('POST', `${lp}/labels`, owner.auth, { name: 'bug', color: '#ff0000' })
  const ui = await must('POST', `${lp}/labels`, owner.auth, { name: 'ui', color: '#00ff00' })
  const point = (value: string) => points.points.find((p: { value: string }) => p.value === value).id as string
  const made = [
    await must('POST', `${lp}/work-items`, owner.auth, { title: 'A', priority: 'urgent', labelIds: [bug.id, ui.id], assigneeIds: [member.id], estimatePointId: point('3') }),
    await must('POST', `${lp}/work-items`, owner.auth, { title: 'B', priority: 'urgent', labelIds: [bug.id], estimatePointId: point('5') }),
    await must('POST', `${lp}/work-items`, owner.auth, { title: 'C', priority: 'low' }),
    await must('POST', `${lp}/work-items`, guest.auth, { title: 'G', priority: 'high', estimatePointId: point('2') })
  ]
  // Created on two days of one week and in the month before, as Berlin reads them.
  const items = app.store.collection<ItemRecord>(TRACKER_COLLECTIONS.items)
  const created = ['2026-03-01T23:30:00.000Z', '2026-03-03T10:00:00.000Z', '2026-02-28T22:00:00.000Z', '2026-03-08T23:30:00.000Z']
  for (const [index, item] of made.entries()) await items.updateOne({ _id: item.id }, { $set: { createdAt: new Date(created[index]) } })

  const report = async (auth: Record<string, string>, query: string) => await must('GET', `${analytics}?lpId=${lpId}&${query}`, auth)

  t.same(await report(owner.auth, 'groupBy=priority'), {
    groupBy: 'priority',
    segment: null,
    total: { count: 4, points: 10 },
    groups: [{ value: 'urgent', count: 2, points: 8 }, { value: 'high', count: 1, points: 2 }, { value: 'low', count: 1, points: 0 }]
  }, 'priorities in their own order, points summed')

  t.same((await report(owner.auth, 'groupBy=label')).groups, [
    { value: bug.id, count: 2, points: 8 }, { value: ui.id, count: 1, points: 3 }, { value: null, count: 2, points: 2 }
  ], 'an item under each of its labels, most first; none last')

  const segmented = await report(owner.auth, 'groupBy=stateGroup&segment=assignee')
  t.same(segmented.groups.map((group: { value: string }) => group.value), ['backlog'], 'every item starts in the backlog')
  t.same(segmented.groups[0].segments, [{ value: member.id, count: 1, points: 3 }, { value: null, count: 3, points: 7 }])

  t.same((await report(owner.auth, 'groupBy=createdAt&interval=week')).groups, [
    { value: '2026-02-23', count: 1, points: 0 },
    { value: '2026-03-02', count: 2, points: 8 },
    { value: '2026-03-09', count: 1, points: 2 }
  ], 'weeks from Monday, in the project\'s timezone')
  t.same((await report(owner.auth, 'groupBy=createdAt&interval=month&segment=priority')).groups, [
    { value: '2026-02-01', count: 1, points: 0, segments: [{ value: 'low', count: 1, points: 0 }] },
    { value: '2026-03-01', count: 3, points: 10, segments: [{ value: 'urgent', count: 2, points: 8 }, { value: 'high', count: 1, points: 2 }] }
  ])
  t.same((await report(owner.auth, 'groupBy=completedAt')).groups, [{ value: null, count: 4, points: 10 }], 'nothing completed yet')
  t.same((await report(owner.auth, 'groupBy=estimate')).groups.map((group: { value: string | null }) => group.value), ['2', '3', '5', null])

  const filter = encodeURIComponent(JSON.stringify({ field: 'priority', op: 'eq', value: 'urgent' }))
  t.same((await report(owner.auth, `groupBy=createdBy&filter=${filter}`)).total, { count: 2, points: 8 }, 'the filter grammar')
  t.same(await report(guest.auth, 'groupBy=priority'), { groupBy: 'priority', segment: null, total: { count: 1, points: 2 }, groups: [{ value: 'high', count: 1, points: 2 }] }, 'a guest counts only what a guest sees')

  const refusals: Array<[string, Record<string, string>, string, number, string]> = [
    ['a bad filter', owner.auth, `groupBy=priority&filter=${encodeURIComponent('{"field":"nope","op":"eq","value":1}')}`, 400, 'APP_TRACKER_INVALID_FILTER'],
    ['segment equal to groupBy', owner.auth, 'groupBy=priority&segment=priority', 400, 'APP_TRACKER_INVALID_VALUE'],
    ['an unknown dimension', owner.auth, 'groupBy=colour', 400, 'APP_VALIDATION_FAILED'],
    ['an outsider', outsider.auth, 'groupBy=priority', 404, 'APP_PROJECT_NOT_FOUND']
  ]
  for (const [name, auth, query, status, code] of refusals) t.match(await api('GET', `${analytics}?lpId=${lpId}&${query}`, auth), { status, body: { code } }, name)
  t.match(await api('GET', `${analytics}?lpId=nope&groupBy=priority`, owner.auth), { status: 404, body: { code: 'APP_TRACKER_PROJECT_NOT_FOUND' } })
})

t.test('date buckets: the week starts on Monday and the day is the timezone\'s', async (t) => {
  t.equal(bucketOf(new Date('2026-03-01T23:30:00Z'), 'week', 'UTC'), '2026-02-23', 'Sunday in UTC')
  t.equal(bucketOf(new Date('2026-03-01T23:30:00Z'), 'week', 'Europe/Berlin'), '2026-03-02', 'already Monday in Berlin')
  t.equal(bucketOf(new Date('2026-03-01T03:00:00Z'), 'month', 'America/New_York'), '2026-02-01', 'still February in New York')
  t.equal(bucketOf(new Date('2027-01-01T12:00:00Z'), 'week', 'UTC'), '2026-12-28', 'a week across the new year')
})
