import t from 'tap'
import { WORKSPACE_COLLECTIONS, type DraftRecord } from '../../../services/tracker/workspace-records.js'
import { trackerSetup } from './fixtures.js'

type Row = Record<string, unknown>
const ids = (rows: Row[]): unknown[] => rows.map((row) => row.id)

/** Stickies and drafts: each person's own, invisible to anyone else; drafts become work items in the project chosen. */
t.test('workspace: stickies and drafts are their owner\'s alone; a promotion finishes once', async (t) => {
  const { app, owner, member, viewer, outsider, projectId, base, lpId, lp, api, must } = await trackerSetup(t)

  const sticky = await api('POST', `${base}/stickies`, viewer.auth, { name: 'Todo', description: '- call Ann', color: 'peach' })
  t.same([sticky.status, sticky.headers.location], [201, `${base}/stickies/${sticky.body.data.id as string}`], 'a reader keeps stickies')
  const second = await must('POST', `${base}/stickies`, viewer.auth, { name: 'Later' })
  t.same(ids((await must('GET', `${base}/stickies`, viewer.auth)).items), [second.id, sticky.body.data.id], 'new ones go first')
  t.same((await must('PATCH', `${base}/stickies/${second.id as string}`, viewer.auth, { sortOrder: 99_999, color: 'green' })).color, 'green')
  t.same(ids((await must('GET', `${base}/stickies`, viewer.auth)).items), [sticky.body.data.id, second.id], 'reordered')
  t.same((await must('GET', `${base}/stickies`, member.auth)).items, [], 'another person lists none of them')
  for (const [method, payload] of [['GET', undefined], ['PATCH', { name: 'mine' }], ['DELETE', undefined]] as const) {
    t.same((await api(method, `${base}/stickies/${second.id as string}`, member.auth, payload)).body.code, 'APP_TRACKER_STICKY_NOT_FOUND', `nor may ${method} one`)
  }
  const badColor = await api('POST', `${base}/stickies`, viewer.auth, { color: 'plaid' })
  t.same([badColor.status, badColor.body.details.fields[0].path], [400, 'body.color'], 'an unknown colour is refused, naming the field')
  t.equal((await api('GET', `${base}/stickies`, outsider.auth)).status, 404, 'an outsider learns nothing')
  t.same((await must('DELETE', `${base}/stickies/${second.id as string}`, viewer.auth)), { id: second.id, deleted: true })

  const draft = await must('POST', `${base}/drafts`, member.auth, { title: 'Idea', description: 'Rough', priority: 'high' })
  t.same((await must('GET', `${base}/drafts`, viewer.auth)).items, [], 'another person\'s drafts are invisible')
  t.equal((await api('GET', `${base}/drafts/${draft.id as string}`, viewer.auth)).body.code, 'APP_TRACKER_DRAFT_NOT_FOUND')
  const blank = await api('POST', `${base}/drafts`, member.auth, { title: '  ' })
  t.same([blank.status, blank.body.details.fields[0].path], [400, 'body.title'])
  const backwards = await api('PATCH', `${base}/drafts/${draft.id as string}`, member.auth, { startDate: '2030-02-02', targetDate: '2030-01-01' })
  t.same([backwards.status, backwards.body.details.fields[0].path], [400, 'body.targetDate'])

  const mine = await must('POST', `${base}/drafts`, viewer.auth, { title: 'Reader idea' })
  const refused = await api('POST', `${base}/drafts/${mine.id as string}/promote`, viewer.auth, { lpId })
  t.same([refused.status, refused.body.details], [403, { permission: 'tracker.write' }], 'promoting makes a work item: a reader is refused, naming tracker.write')
  const nowhere = await api('POST', `${base}/drafts/${draft.id as string}/promote`, member.auth, { lpId: 'nope' })
  t.same([nowhere.status, nowhere.body.details.fields[0].path], [400, 'body.lpId'])

  const item = await must('POST', `${base}/drafts/${draft.id as string}/promote`, member.auth, { lpId })
  t.same([item.title, item.description, item.priority, item.key], ['Idea', 'Rough', 'high', 'WEB-1'])
  t.equal((await api('GET', `${base}/drafts/${draft.id as string}`, member.auth)).status, 404, 'the draft is gone')

  // A crash after the item was made and before the draft was deleted: the draft is still there, claimed. The retry
  // finishes the promotion with the same item, and makes no second one.
  const drafts = app.store.collection<DraftRecord>(WORKSPACE_COLLECTIONS.drafts)
  const now = new Date()
  await drafts.insertOne({ _id: draft.id, projectId, ownerId: member.id, title: 'Idea', description: 'Rough', priority: 'high', startDate: null, targetDate: null, promotingTo: lpId, createdAt: now, updatedAt: now })
  t.same((await api('PATCH', `${base}/drafts/${draft.id as string}`, member.auth, { title: 'Other' })).body.code, 'APP_TRACKER_DRAFT_PROMOTING', 'a claimed draft is fixed')
  t.same((await api('POST', `${base}/drafts/${draft.id as string}/promote`, member.auth, { lpId: 'elsewhere' })).body.code, 'APP_TRACKER_DRAFT_PROMOTING')
  const again = await must('POST', `${base}/drafts/${draft.id as string}/promote`, member.auth, { lpId })
  t.equal(again.id, item.id, 'the retry answers the item made the first time')
  t.equal((await must('GET', `${lp}/work-items`, member.auth)).items.length, 1, 'one item')
  t.equal(await drafts.countDocuments({ _id: draft.id }), 0)

  // Deleting the platform project takes everyone's workspace things with it.
  t.equal((await api('DELETE', `/api/projects/${projectId}`, owner.auth)).status, 200)
  for (const name of Object.values(WORKSPACE_COLLECTIONS)) t.equal(await app.store.collection(name).countDocuments({ projectId }), 0, `${name} swept`)
})

/** Recents, favorites, members: what the caller opened, what they marked, who can be assigned. */
t.test('workspace: recents, favorites and members', async (t) => {
  const { owner, member, viewer, guest, outsider, base, lpId, lp, api, must } = await trackerSetup(t)
  const item = await must('POST', `${lp}/work-items`, member.auth, { title: 'One' })
  const view = await must('POST', `${lp}/views`, member.auth, { name: 'Mine' })
  await must('GET', `${lp}/work-items/${item.id as string}`, member.auth)
  await must('GET', `${lp}/views/${view.id as string}`, member.auth)
  await must('GET', `${lp}/work-items/${item.id as string}`, member.auth)
  const recents = (await must('GET', `${base}/recents`, member.auth)).items as Row[]
  t.same(recents.map((entry) => [entry.kind, entry.entityId, entry.lpId]), [['workItem', item.id, lpId], ['view', view.id, lpId]], 'most recent first, once each')
  t.same((await must('GET', `${base}/recents`, viewer.auth)).items, [], 'each person\'s own')
  t.equal((await api('GET', `${base}/recents`, outsider.auth)).status, 404)

  // Favorites: a project, a view; a private project the caller is taken out of drops from the list.
  const priv = await must('POST', `${base}/projects`, owner.auth, { name: 'Secret', identifier: 'SEC', visibility: 'private' })
  await must('POST', `${base}/projects/${priv.id as string}/members`, owner.auth, { userId: member.id, role: 'member' })
  const favProject = await api('POST', `${base}/favorites`, member.auth, { kind: 'project', lpId: priv.id })
  t.equal(favProject.status, 201)
  const favView = await must('POST', `${base}/favorites`, member.auth, { kind: 'view', lpId, entityId: view.id })
  t.same(ids((await must('GET', `${base}/favorites`, member.auth)).items), [favView.id, favProject.body.data.id])
  t.equal((await api('POST', `${base}/favorites`, member.auth, { kind: 'view', lpId, entityId: view.id })).body.code, 'APP_TRACKER_ALREADY_FAVORITE')
  const unknown = await api('POST', `${base}/favorites`, member.auth, { kind: 'cycle', lpId, entityId: 'nope' })
  t.same([unknown.status, unknown.body.details.fields[0].path], [400, 'body.entityId'])
  const noEntity = await api('POST', `${base}/favorites`, member.auth, { kind: 'page', lpId })
  t.same([noEntity.status, noEntity.body.details.fields[0].path], [400, 'body.entityId'])
  const notTheirs = await api('POST', `${base}/favorites`, viewer.auth, { kind: 'view', lpId, entityId: view.id })
  t.same([notTheirs.status, notTheirs.body.details.fields[0].path], [400, 'body.entityId'], 'someone else\'s private view cannot be a favorite')
  t.same((await must('PATCH', `${base}/favorites/${favView.id as string}`, member.auth, { sortOrder: 1e6 })).sortOrder, 1e6)
  t.same(ids((await must('GET', `${base}/favorites`, member.auth)).items), [favProject.body.data.id, favView.id], 'reordered')
  await must('DELETE', `${base}/projects/${priv.id as string}/members/${member.id}`, owner.auth)
  t.same(ids((await must('GET', `${base}/favorites`, member.auth)).items), [favView.id], 'a project they no longer read is not shown')
  t.equal((await api('DELETE', `${base}/favorites/${favView.id as string}`, viewer.auth)).body.code, 'APP_TRACKER_FAVORITE_NOT_FOUND')
  t.same(await must('DELETE', `${base}/favorites/${favView.id as string}`, member.auth), { id: favView.id, deleted: true })

  // Members: every tracker user, with their role in each project the caller reads.
  const people = (await must('GET', `${base}/members?limit=200`, viewer.auth)).items as Array<{ userId: string, projects: Row[] }>
  const roleOf = (userId: string) => people.find((person) => person.userId === userId)?.projects.find((entry) => entry.lpId === lpId)?.role
  t.same([roleOf(owner.id), roleOf(member.id), roleOf(viewer.id), roleOf(guest.id)], ['admin', 'member', 'member', 'guest'])
  t.notOk(people.some((person) => person.userId === outsider.id), 'an outsider cannot be assigned')
  t.notOk(people.some((person) => person.projects.some((entry) => entry.lpId === priv.id)), 'a private project the reader does not see is not shown')
  const page = await must('GET', `${base}/members?limit=1`, viewer.auth)
  const next = await must('GET', `${base}/members?limit=1&cursor=${encodeURIComponent(page.nextCursor as string)}`, viewer.auth)
  t.not(next.items[0].userId, page.items[0].userId, 'keyset pages')
  t.equal((await api('GET', `${base}/members`, outsider.auth)).status, 404)
})

/** Activity, workspace views and active cycles: across projects, only what the caller may read, a guest their own items. */
t.test('workspace: activity, views and active cycles across projects', async (t) => {
  const { owner, member, viewer, guest, outsider, base, lp, lpId, api, must } = await trackerSetup(t)
  const other = await must('POST', `${base}/projects`, owner.auth, { name: 'Docs', identifier: 'DOC' })
  await must('POST', `${base}/projects/${other.id as string}/members`, owner.auth, { userId: guest.id, role: 'guest' })
  const high = await must('POST', `${lp}/work-items`, member.auth, { title: 'Urgent thing', priority: 'high' })
  await must('POST', `${base}/projects/${other.id as string}/work-items`, owner.auth, { title: 'Docs thing', priority: 'high' })
  const guests = await must('POST', `${lp}/work-items`, guest.auth, { title: 'Guest own' })
  await must('PATCH', `${lp}/work-items/${high.id as string}`, member.auth, { priority: 'urgent' })

  const feed = async (auth: Record<string, string>, query = ''): Promise<Row[]> => (await must('GET', `${base}/activity${query}`, auth)).items
  const all = await feed(viewer.auth)
  t.same(new Set(all.map((entry) => entry.lpId)), new Set([lpId, other.id]), 'across the projects')
  t.same(all[0].field, 'priority', 'newest first')
  t.same(new Set((await feed(guest.auth)).map((entry) => entry.itemId)), new Set([guests.id]), 'a guest sees the activity of their own items only')
  const filter = encodeURIComponent(JSON.stringify({ field: 'priority', op: 'eq', value: 'urgent' }))
  t.same(new Set((await feed(viewer.auth, `?filter=${filter}`)).map((entry) => entry.itemId)), new Set([high.id]), 'the filter selects items')
  const first = await must('GET', `${base}/activity?limit=1`, viewer.auth)
  const rest = await must('GET', `${base}/activity?limit=100&cursor=${encodeURIComponent(first.nextCursor as string)}`, viewer.auth)
  t.same([...ids(first.items), ...ids(rest.items)], ids(all), 'pages follow on')
  t.equal(rest.nextCursor, null)
  const bad = await api('GET', `${base}/activity?filter=${encodeURIComponent(JSON.stringify({ field: 'colour', op: 'eq', value: 1 }))}`, viewer.auth)
  t.same([bad.status, bad.body.code, bad.body.details.fields[0].path], [400, 'APP_TRACKER_INVALID_FILTER', 'query.filter.field'])
  t.equal((await api('GET', `${base}/activity`, outsider.auth)).status, 404)

  // Workspace views: private for anyone reading, public with tracker.write; applied across projects.
  const refused = await api('POST', `${base}/views`, viewer.auth, { name: 'Shared', access: 'public' })
  t.same([refused.status, refused.body.details], [403, { permission: 'tracker.write' }], 'a reader may not share a view')
  const own = await api('POST', `${base}/views`, viewer.auth, { name: 'Just me' })
  t.same([own.status, own.headers.location], [201, `${base}/views/${own.body.data.id as string}`])
  t.equal((await api('GET', `${base}/views/${own.body.data.id as string}`, member.auth)).body.code, 'APP_TRACKER_WORKSPACE_VIEW_NOT_FOUND', 'a private view is its owner\'s')
  const badFilter = await api('POST', `${base}/views`, member.auth, { name: 'Bad', filter: { field: 'priority', op: 'lt', value: 'x' } })
  t.same([badFilter.status, badFilter.body.details.fields[0].path], [400, 'body.filter.op'])
  const shared = await must('POST', `${base}/views`, member.auth, { name: 'Hot', access: 'public', locked: true, filter: { field: 'priority', op: 'in', value: ['urgent', 'high'] } })
  const apply = async (auth: Record<string, string>) => ((await must('GET', `${base}/views/${shared.id as string}/items`, auth)).items as Row[]).map((row) => row.title).sort()
  t.same(await apply(viewer.auth), ['Docs thing', 'Urgent thing'], 'across every project the caller reads')
  t.same(await apply(guest.auth), [], 'a guest sees only their own items (none of them is hot)')
  t.equal((await api('PATCH', `${base}/views/${shared.id as string}`, viewer.auth, { name: 'Mine now' })).body.code, 'APP_TRACKER_VIEW_LOCKED')
  t.equal((await api('PATCH', `${base}/views/${shared.id as string}`, viewer.auth, { locked: false })).body.code, 'APP_TRACKER_VIEW_LOCKED', 'only its owner unlocks it')
  t.same((await must('PATCH', `${base}/views/${shared.id as string}`, member.auth, { locked: false })).locked, false)
  t.equal((await api('PATCH', `${base}/views/${shared.id as string}`, viewer.auth, { name: 'Mine now' })).body.code, 'APP_TRACKER_NOT_YOURS')
  t.same(ids((await must('GET', `${base}/views`, viewer.auth)).items).sort(), [own.body.data.id, shared.id].sort())
  t.same(await must('DELETE', `${base}/views/${shared.id as string}`, owner.auth), { id: shared.id, deleted: true }, 'a tracker.admin holder may delete it')

  // Active cycles: the one holding today, with progress; none for a guest.
  const day = (offset: number) => new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10)
  const cycle = await must('POST', `${lp}/cycles`, member.auth, { name: 'Now', startDate: day(-1), endDate: day(6) })
  await must('POST', `${lp}/cycles`, member.auth, { name: 'Later', startDate: day(10), endDate: day(20) })
  await must('POST', `${lp}/cycles/${cycle.id as string}/work-items`, member.auth, { itemIds: [high.id] })
  const active = (await must('GET', `${base}/active-cycles`, viewer.auth)).items as Array<Row & { progress: Row }>
  t.same(active.map((entry) => [entry.id, entry.projectIdentifier, entry.progress.total]), [[cycle.id, 'WEB', 1]])
  t.same((await must('GET', `${base}/active-cycles`, guest.auth)).items, [], 'a guest uses no cycles')
  t.equal((await api('GET', `${base}/active-cycles`, outsider.auth)).status, 404)
})
