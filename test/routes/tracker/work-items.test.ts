import t from 'tap'
import { trackerSetup } from './fixtures.js'

const json = (value: unknown): string => encodeURIComponent(JSON.stringify(value))

t.test('work items: bad input names its field, filters name the field and operator at fault', async (t) => {
  const { owner, member, lp, api, must } = await trackerSetup(t)
  const label = await must('POST', `${lp}/labels`, owner.auth, { name: 'bug', color: '#ff0000' })
  const writes: Array<[string, unknown, string, string]> = [
    ['no title', { priority: 'high' }, 'APP_VALIDATION_FAILED', 'body.title'],
    ['a title too long', { title: 'x'.repeat(501) }, 'APP_VALIDATION_FAILED', 'body.title'],
    ['an unknown priority', { title: 'T', priority: 'asap' }, 'APP_VALIDATION_FAILED', 'body.priority'],
    ['a date that is not a day', { title: 'T', startDate: '2026-13-40' }, 'APP_VALIDATION_FAILED', 'body.startDate'],
    ['an unknown field', { title: 'T', points: 3 }, 'APP_VALIDATION_FAILED', 'body.points'],
    ['a blank title', { title: '  ' }, 'APP_TRACKER_INVALID_VALUE', 'body.title'],
    ['dates out of order', { title: 'T', startDate: '2026-05-02', targetDate: '2026-05-01' }, 'APP_TRACKER_INVALID_VALUE', 'body.targetDate'],
    ['an unknown state', { title: 'T', stateId: 'nope' }, 'APP_TRACKER_INVALID_REFERENCE', 'body.stateId'],
    ['an unknown label after a known one', { title: 'T', labelIds: [label.id, 'nope'] }, 'APP_TRACKER_INVALID_REFERENCE', 'body.labelIds[1]'],
    ['an assignee who is no member', { title: 'T', assigneeIds: ['stranger'] }, 'APP_TRACKER_NOT_A_MEMBER', 'body.assigneeIds[0]'],
    ['markdown and editor JSON at once', { title: 'T', description: 'a', descriptionJson: { type: 'doc' } }, 'APP_TRACKER_INVALID_VALUE', 'body.description']
  ]
  for (const [name, payload, code, path] of writes) {
    const res = await api('POST', `${lp}/work-items`, member.auth, payload)
    t.same([res.status, res.body.code, res.body.details?.fields?.[0]?.path], [400, code, path], name)
  }
  t.same((await must('GET', `${lp}/work-items`, member.auth)).items, [], 'nothing refused was created')

  const filters: Array<[string, unknown, string, string | undefined]> = [
    ['an unknown field', { field: 'colour', op: 'eq', value: 'red' }, 'query.filter.field', 'colour'],
    ['an unknown operator', { and: [{ field: 'priority', op: 'eq', value: 'high' }, { field: 'title', op: 'like', value: 'x' }] }, 'query.filter.and[1].op', 'title'],
    ['an operator the field does not take', { field: 'title', op: 'lt', value: 'x' }, 'query.filter.op', 'title'],
    ['a value of the wrong kind', { field: 'priority', op: 'eq', value: 'soon' }, 'query.filter.value', 'priority'],
    ['a relative day that is none', { field: 'targetDate', op: 'lt', value: 'someday' }, 'query.filter.value', 'targetDate'],
    ['not a filter', ['priority'], 'query.filter', undefined]
  ]
  for (const [name, filter, path, field] of filters) {
    for (const route of ['work-items', 'work-items/count']) {
      const res = await api('GET', `${lp}/${route}?filter=${json(filter)}`, member.auth)
      t.same([res.status, res.body.code, res.body.details.fields[0].path, res.body.details.fields[0].field], [400, 'APP_TRACKER_INVALID_FILTER', path, field], `${route}: ${name}`)
    }
  }
  t.match((await api('GET', `${lp}/work-items?filter=${json({ field: 'colour', op: 'eq', value: 1 })}`, member.auth)).body.message, /"colour" is not a filterable field/)
  t.equal((await api('GET', `${lp}/work-items?filter=%7Bnot%20json`, member.auth)).body.code, 'APP_TRACKER_INVALID_FILTER')
  const view = await api('POST', `${lp}/views`, member.auth, { name: 'Bad', filter: { field: 'number', op: 'between', value: [1] } })
  t.same([view.status, view.body.code, view.body.details.fields[0].path], [400, 'APP_TRACKER_INVALID_FILTER', 'body.filter.value'], 'a view\'s filter is checked by the same grammar')
})

t.test('work items: a guest sees only her own, ETags and If-Match, Idempotency-Key, cursors, counts, sync with tombstones', async (t) => {
  const { owner, member, viewer, guest, lp, api, must } = await trackerSetup(t)
  const made = []
  for (let n = 1; n <= 5; n++) made.push(await must('POST', `${lp}/work-items`, member.auth, { title: `Item ${n}`, priority: n % 2 === 0 ? 'high' : 'low' }))
  const hers = await must('POST', `${lp}/work-items`, guest.auth, { title: 'The guest\'s own' })
  await must('PATCH', `${lp}/work-items/${made[0].id as string}`, member.auth, { assigneeIds: [guest.id] })
  const seen = (await must('GET', `${lp}/work-items`, guest.auth)).items.map((item: { id: string }) => item.id)
  t.same(seen.sort(), [made[0].id, hers.id].sort(), 'a guest lists what she created or is assigned')
  t.same((await api('GET', `${lp}/work-items/${made[1].id as string}`, guest.auth)).body.code, 'APP_TRACKER_ITEM_NOT_FOUND', 'and nothing else exists for her')
  t.same((await api('PATCH', `${lp}/work-items/${made[0].id as string}`, guest.auth, { title: 'Mine now' })).body.code, 'APP_TRACKER_GUEST_REFUSED')
  t.same((await api('DELETE', `${lp}/work-items/${hers.id as string}`, member.auth)).body.code, 'APP_TRACKER_NOT_YOURS', 'a member deletes only what she made')
  t.equal((await must('GET', `${lp}/work-items/count`, guest.auth)).total, 2)

  // ETag and If-Match.
  const got = await api('GET', `${lp}/work-items/${made[1].id as string}`, viewer.auth)
  t.equal(got.headers.etag, `"${got.body.data.version as number}"`)
  const changed = await api('PATCH', `${lp}/work-items/${made[1].id as string}`, { ...member.auth, 'if-match': got.headers.etag as string }, { title: 'Renamed' })
  t.same([changed.status, changed.headers.etag], [200, `"${got.body.data.version + 1 as number}"`])
  const lost = await api('PATCH', `${lp}/work-items/${made[1].id as string}`, { ...member.auth, 'if-match': got.headers.etag as string }, { title: 'Lost' })
  t.same([lost.status, lost.body.code, lost.body.details], [412, 'APP_TRACKER_VERSION_MISMATCH', { expected: got.body.data.version, actual: got.body.data.version + 1 }])
  t.equal((await api('DELETE', `${lp}/work-items/${made[1].id as string}`, { ...member.auth, 'if-match': got.headers.etag as string })).status, 412)

  // Idempotency-Key: a retry gets the first item; another body with the key is refused.
  const key = { ...member.auth, 'idempotency-key': 'create-once-1' }
  const first = await api('POST', `${lp}/work-items`, key, { title: 'Once' })
  const again = await api('POST', `${lp}/work-items`, key, { title: 'Once' })
  t.same([first.status, again.status, again.body.data.id, again.body.data.key], [201, 201, first.body.data.id, first.body.data.key])
  t.same((await api('POST', `${lp}/work-items`, key, { title: 'Twice' })).body.code, 'APP_TRACKER_IDEMPOTENCY_KEY_REUSED')
  t.same((await api('POST', `${lp}/work-items`, { ...member.auth, 'idempotency-key': 'a b' }, { title: 'T' })).body.details.fields[0].path, 'headers.idempotency-key')

  // Keyset cursors through every page once; a cursor of another list is refused.
  const keys: string[] = []
  let cursor: string | null = null
  do {
    const page: { items: Array<{ key: string }>, nextCursor: string | null } = await must('GET', `${lp}/work-items?limit=2&orderBy=number${cursor === null ? '' : `&cursor=${cursor}`}`, viewer.auth)
    keys.push(...page.items.map((item) => item.key))
    cursor = page.nextCursor
  } while (cursor !== null)
  t.same(keys, ['WEB-1', 'WEB-2', 'WEB-3', 'WEB-4', 'WEB-5', 'WEB-6', 'WEB-7'])
  const firstPage = await must('GET', `${lp}/work-items?limit=2&orderBy=number`, viewer.auth)
  t.equal((await api('GET', `${lp}/work-items?limit=2&orderBy=-number&cursor=${firstPage.nextCursor as string}`, viewer.auth)).body.code, 'APP_INVALID_CURSOR')
  t.equal((await api('GET', `${lp}/states?cursor=${firstPage.nextCursor as string}`, viewer.auth)).body.code, 'APP_INVALID_CURSOR')

  // Counts by group, in the field's order.
  const counted = await must('GET', `${lp}/work-items/count?groupBy=priority`, viewer.auth)
  t.same([counted.total, counted.groups.map((group: { value: string, count: number }) => [group.value, group.count])],
    [7, [['urgent', 0], ['high', 2], ['medium', 0], ['low', 3], ['none', 2]]])

  // Sync: every change after an instant, oldest first, deletes as tombstones.
  const since = new Date().toISOString()
  await new Promise((resolve) => setTimeout(resolve, 5))
  await must('PATCH', `${lp}/work-items/${made[2].id as string}`, member.auth, { priority: 'urgent' })
  await must('DELETE', `${lp}/work-items/${made[3].id as string}`, owner.auth)
  const sync = await must('GET', `${lp}/work-items?updatedSince=${encodeURIComponent(since)}`, viewer.auth)
  t.same(sync.items.map((item: { key: string, deleted?: boolean }) => [item.key, item.deleted ?? false]), [['WEB-3', false], ['WEB-4', true]])
  t.same((await api('GET', `${lp}/work-items?updatedSince=${encodeURIComponent(since)}&orderBy=number`, viewer.auth)).body.details.fields[0].path, 'query.updatedSince')
})

t.test('bulk patch: each item whole or untouched, the others not held back', async (t) => {
  const { member, lp, api, must } = await trackerSetup(t)
  const items = []
  for (let n = 1; n <= 4; n++) items.push(await must('POST', `${lp}/work-items`, member.auth, { title: `Item ${n}` }))
  const ids = items.map((item) => item.id as string)

  // One patch for all, refused for each: nothing of it is written anywhere.
  const refused = await must('PATCH', `${lp}/work-items`, member.auth, { ids, patch: { priority: 'urgent', labelIds: ['nope'] } })
  t.same([refused.patched, refused.failed, [...new Set(refused.results.map((result: { code: string }) => result.code))]], [0, 4, ['APP_TRACKER_INVALID_REFERENCE']])
  for (const id of ids) t.match(await must('GET', `${lp}/work-items/${id}`, member.auth), { priority: 'none', version: 1 }, 'untouched')

  // One patch per item; the second fails half-way through its fields: none of them is written.
  const mixed = await must('PATCH', `${lp}/work-items`, member.auth, {
    items: [
      { id: ids[0], patch: { priority: 'high', title: 'First, patched' } },
      { id: ids[1], patch: { priority: 'high', title: 'Second, refused', targetDate: '2026-01-01', startDate: '2026-02-01' } },
      { id: ids[2], patch: { priority: 'low' } }
    ]
  })
  t.same(mixed.results.map((result: { status: number, key: string | null }) => [result.status, result.key]), [[200, 'WEB-1'], [400, null], [200, 'WEB-3']])
  t.match(await must('GET', `${lp}/work-items/${ids[1]}`, member.auth), { priority: 'none', title: 'Item 2', targetDate: null, version: 1 })
  const activity = await must('GET', `${lp}/work-items/${ids[1]}/activity`, member.auth)
  t.same(activity.items.map((entry: { field: string }) => entry.field), ['created'], 'and its activity holds no change')

  // A body that is not a bulk patch, or too large, is refused whole.
  t.equal((await api('PATCH', `${lp}/work-items`, member.auth, { ids, items: [{ id: ids[0], patch: { priority: 'low' } }] })).body.code, 'APP_TRACKER_INVALID_BULK')
  const tooMany = await api('PATCH', `${lp}/work-items`, member.auth, { ids: Array.from({ length: 501 }, (_, i) => `i${i}`), patch: { priority: 'low' } })
  t.same([tooMany.status, tooMany.body.details.fields[0].path], [400, 'body.ids'])
  t.equal((await must('GET', `${lp}/work-items/${ids[3]}`, member.auth)).version, 1)

  // Keyed: a retry answers the kept results and patches nothing twice.
  const key = { ...member.auth, 'idempotency-key': 'bulk-1' }
  const once = await must('PATCH', `${lp}/work-items`, key, { ids: [ids[3]], patch: { priority: 'urgent' } })
  const twice = await must('PATCH', `${lp}/work-items`, key, { ids: [ids[3]], patch: { priority: 'urgent' } })
  t.same(twice, once)
  t.equal((await must('GET', `${lp}/work-items/${ids[3]}`, member.auth)).version, 2)
})
