import t from 'tap'
import { readFileSync } from 'node:fs'
import { parse } from 'yaml'
import type { HttpMethod } from '../../helper.js'
import { trackerSetup } from './fixtures.js'

type Row = [HttpMethod, string, unknown, string]

t.test('every tracker route checks its permission before anything of the tracker project is read', async (t) => {
  const { member, viewer, outsider, lp, base, api, app } = await trackerSetup(t)
  const thumbs = encodeURIComponent('👍')
  const item = `${lp}/work-items/nope`
  // Ids that name nothing: the permission is checked in the platform project, before the tracker project or what is in it loads.
  const nowhere = `${base}/projects/nope`
  const writes: Row[] = [
    ['POST', `${base}/projects`, { name: 'X', identifier: 'X' }, 'tracker.admin'],
    ['PATCH', nowhere, { name: 'X' }, 'tracker.admin'],
    ['DELETE', nowhere, undefined, 'tracker.admin'],
    ['POST', `${nowhere}/archive`, undefined, 'tracker.admin'],
    ['POST', `${nowhere}/restore`, undefined, 'tracker.admin'],
    ['PATCH', `${nowhere}/automations`, { autoCloseMonths: 1 }, 'tracker.admin'],
    ['POST', `${nowhere}/members`, { userId: 'u1', role: 'member' }, 'tracker.admin'],
    ['PATCH', `${nowhere}/members/u1`, { role: 'guest' }, 'tracker.admin'],
    ['DELETE', `${nowhere}/members/u1`, undefined, 'tracker.admin'],
    ['POST', `${nowhere}/states`, { name: 'S', color: '#000000', group: 'started' }, 'tracker.admin'],
    ['PATCH', `${nowhere}/states/s1`, { name: 'S' }, 'tracker.admin'],
    ['DELETE', `${nowhere}/states/s1`, undefined, 'tracker.admin'],
    ['POST', `${nowhere}/labels`, { name: 'L', color: '#000000' }, 'tracker.admin'],
    ['PATCH', `${nowhere}/labels/l1`, { name: 'L' }, 'tracker.admin'],
    ['DELETE', `${nowhere}/labels/l1`, undefined, 'tracker.admin'],
    ['POST', `${nowhere}/issue-types`, { name: 'Bug' }, 'tracker.admin'],
    ['PATCH', `${nowhere}/issue-types/t1`, { name: 'Bug' }, 'tracker.admin'],
    ['DELETE', `${nowhere}/issue-types/t1`, undefined, 'tracker.admin'],
    ['POST', `${nowhere}/estimates`, { name: 'E', type: 'points', points: ['1'] }, 'tracker.admin'],
    ['PATCH', `${nowhere}/estimates/e1`, { name: 'E' }, 'tracker.admin'],
    ['DELETE', `${nowhere}/estimates/e1`, undefined, 'tracker.admin'],
    ['POST', `${lp}/work-items`, { title: 'T' }, 'tracker.write'],
    ['PATCH', `${lp}/work-items`, { ids: ['i1'], patch: { priority: 'high' } }, 'tracker.write'],
    ['PATCH', item, { title: 'T' }, 'tracker.write'],
    ['DELETE', item, undefined, 'tracker.write'],
    ['POST', `${item}/comments`, { body: 'hi' }, 'tracker.write'],
    ['PATCH', `${item}/comments/c1`, { body: 'hello' }, 'tracker.write'],
    ['DELETE', `${item}/comments/c1`, undefined, 'tracker.write'],
    ['POST', `${item}/reactions`, { emoji: '👍' }, 'tracker.write'],
    ['DELETE', `${item}/reactions/${thumbs}`, undefined, 'tracker.write'],
    ['POST', `${item}/comments/c1/reactions`, { emoji: '👍' }, 'tracker.write'],
    ['DELETE', `${item}/comments/c1/reactions/${thumbs}`, undefined, 'tracker.write'],
    ['POST', `${item}/links`, { url: 'https://example.com/' }, 'tracker.write'],
    ['DELETE', `${item}/links/k1`, undefined, 'tracker.write'],
    ['POST', `${item}/relations`, { type: 'blocking', itemId: 'i2' }, 'tracker.write'],
    ['DELETE', `${item}/relations/r1`, undefined, 'tracker.write'],
    ['POST', `${item}/subscribers`, {}, 'tracker.write'],
    ['DELETE', `${item}/subscribers/u1`, undefined, 'tracker.write'],
    ['POST', `${item}/attachments/upload-sessions`, { name: 'a.txt', size: 1, type: 'text/plain' }, 'tracker.write'],
    ['DELETE', `${item}/attachments/upload-sessions/s1`, undefined, 'tracker.write'],
    ['POST', `${item}/attachments/upload-sessions/s1/complete`, undefined, 'tracker.write'],
    ['DELETE', `${item}/attachments/a1`, undefined, 'tracker.write'],
    ['POST', `${lp}/cycles`, { name: 'C' }, 'tracker.write'],
    ['PATCH', `${lp}/cycles/c1`, { name: 'C' }, 'tracker.write'],
    ['DELETE', `${lp}/cycles/c1`, undefined, 'tracker.write'],
    ['DELETE', `${lp}/cycles/c1/work-items/i1`, undefined, 'tracker.write'],
    ['POST', `${lp}/cycles/c1/transfer`, { targetCycleId: 'c2' }, 'tracker.write'],
    ['POST', `${lp}/cycles/c1/work-items`, { itemIds: ['i1'] }, 'tracker.write'],
    ['POST', `${lp}/modules`, { name: 'M' }, 'tracker.write'],
    ['PATCH', `${lp}/modules/m1`, { name: 'M' }, 'tracker.write'],
    ['DELETE', `${lp}/modules/m1`, undefined, 'tracker.write'],
    ['POST', `${lp}/modules/m1/work-items`, { add: ['i1'] }, 'tracker.write'],
    ['POST', `${lp}/views`, { name: 'V' }, 'tracker.write'],
    ['PATCH', `${lp}/views/v1`, { name: 'V' }, 'tracker.write'],
    ['DELETE', `${lp}/views/v1`, undefined, 'tracker.write'],
    ['POST', `${lp}/intake`, { title: 'T' }, 'tracker.write'],
    ['PATCH', `${lp}/intake/i1`, { status: 'declined' }, 'tracker.write'],
    ['POST', `${lp}/pages`, { title: 'P' }, 'tracker.write'],
    ['PATCH', `${lp}/pages/p1`, { title: 'P' }, 'tracker.write'],
    ['DELETE', `${lp}/pages/p1`, undefined, 'tracker.write'],
    ['POST', `${lp}/pages/p1/versions/p1:1/restore`, undefined, 'tracker.write'],
    ['POST', `${base}/webhooks`, { url: 'https://hooks.example.com/h', events: ['*'] }, 'tracker.admin'],
    ['PATCH', `${base}/webhooks/w1`, { description: 'd' }, 'tracker.admin'],
    ['DELETE', `${base}/webhooks/w1`, undefined, 'tracker.admin'],
    ['POST', `${base}/webhooks/w1/rotate-secret`, {}, 'tracker.admin'],
    ['POST', `${base}/webhooks/w1/test`, {}, 'tracker.admin'],
    ['POST', `${base}/webhooks/w1/replay`, { from: '2026-01-01T00:00:00.000Z', to: '2026-01-02T00:00:00.000Z' }, 'tracker.admin'],
    ['POST', `${base}/webhooks/w1/deliveries/d1/redeliver`, undefined, 'tracker.admin']
  ]
  for (const [method, url, payload, permission] of writes) {
    const asReader = await api(method, url, viewer.auth, payload)
    t.same([asReader.status, asReader.body.code, asReader.body.details], [403, 'APP_FORBIDDEN', { permission }], `a reader: ${method} ${url}`)
    if (permission === 'tracker.admin') {
      const asMember = await api(method, url, member.auth, payload)
      t.same([asMember.status, asMember.body.details], [403, { permission }], `a member: ${method} ${url}`)
    }
    const asOutsider = await api(method, url, outsider.auth, payload)
    t.same([asOutsider.status, asOutsider.body.code], [404, 'APP_PROJECT_NOT_FOUND'], `an outsider: ${method} ${url}`)
  }
  const chunk = `${item}/attachments/upload-sessions/s1/chunks/0`
  const sent = await app.inject({ method: 'PUT', url: chunk, headers: { ...viewer.auth, 'content-type': 'application/octet-stream' }, payload: Buffer.from('x') })
  t.same([sent.statusCode, sent.json().details], [403, { permission: 'tracker.write' }], 'a reader sending a chunk')
  // The table covers every write the contract lists, with the permission the contract says it needs.
  const tried: Array<[string, string, string]> = [...writes.map(([method, url, , permission]): [string, string, string] => [method, url, permission]), ['PUT', chunk, 'tracker.write']]
  const contract = parse(readFileSync(new URL('../../../openapi.yaml', import.meta.url), 'utf8')) as { paths: Record<string, Record<string, { description: string }>> }
  for (const [path, operations] of Object.entries(contract.paths)) {
    if (!path.startsWith('/api/projects/{projectId}/tracker/')) continue
    const shape = new RegExp(`^${path.replace('/api/projects/{projectId}/tracker', '').replace(/\{[^}]+\}/g, '[^/]+')}$`)
    for (const [method, operation] of Object.entries(operations)) {
      const needs = /Needs `([a-z.]+)`/.exec(operation.description)?.[1]
      // A reader may do what needs only tracker.read (its own notifications, exports, stickies, drafts, favorites and
      // private workspace views; promoting a draft and sharing a view check tracker.write themselves: workspace.test.ts).
      if (method === 'get' || needs === 'tracker.read') continue
      const rows = tried.filter(([m, url]) => m === method.toUpperCase() && shape.test(url.slice(base.length)))
      t.ok(rows.length > 0 && rows.every(([, , permission]) => permission === needs), `${method.toUpperCase()} ${path}: refused to a reader, naming ${String(needs)}`)
    }
  }
  for (const url of [`${base}/projects`, `${lp}/work-items`, `${lp}/states`, `${base}/browse/WEB-1`]) {
    t.equal((await api('GET', url, outsider.auth)).status, 404, `an outsider reads nothing: ${url}`)
    t.equal((await api('GET', url, {})).status, 401, `nor does anyone without a credential: ${url}`)
  }
  t.same((await api('GET', `${nowhere}/work-items`, viewer.auth)).body.code, 'APP_TRACKER_PROJECT_NOT_FOUND', 'a reader of an unknown tracker project')
})

t.test('tracker projects: identifiers, renames, If-Match, private projects, archive, delete', async (t) => {
  const { owner, member, viewer, guest, projectId, base, lp, lpId, api, must, app } = await trackerSetup(t)
  const refusals: Array<[string, unknown, number, string, string]> = [
    ['an identifier taken', { name: 'Other', identifier: 'WEB' }, 409, 'APP_TRACKER_IDENTIFIER_TAKEN', ''],
    ['an identifier of 13 letters', { name: 'Other', identifier: 'ABCDEFGHIJKLM' }, 400, 'APP_VALIDATION_FAILED', 'body.identifier'],
    ['an identifier starting with a digit', { name: 'Other', identifier: '1AB' }, 400, 'APP_VALIDATION_FAILED', 'body.identifier'],
    ['a blank name', { name: '   ', identifier: 'OK' }, 400, 'APP_TRACKER_INVALID_VALUE', 'body.name'],
    ['an unknown timezone', { name: 'Other', identifier: 'OK', timezone: 'Mars/Olympus' }, 400, 'APP_TRACKER_INVALID_TIMEZONE', 'body.timezone'],
    ['a lead who cannot use the tracker', { name: 'Other', identifier: 'OK', leadId: 'nobody' }, 400, 'APP_TRACKER_NOT_A_MEMBER', 'body.leadId'],
    ['an unknown field', { name: 'Other', identifier: 'OK', color: 'red' }, 400, 'APP_VALIDATION_FAILED', 'body.color']
  ]
  for (const [name, payload, status, code, path] of refusals) {
    const res = await api('POST', `${base}/projects`, owner.auth, payload)
    t.same([res.status, res.body.code], [status, code], name)
    if (path !== '') t.equal(res.body.details?.fields?.[0]?.path, path, `${name}: names ${path}`)
  }

  // A rename keeps the old keys resolvable, and the old identifier taken.
  await must('POST', `${lp}/work-items`, member.auth, { title: 'First' })
  const read = await api('GET', lp, viewer.auth)
  t.same([read.headers.etag, read.body.data.role], ['"1"', 'member'], 'a reader of a public project works in it as a member')
  const stale = await api('PATCH', lp, owner.auth, { identifier: 'site' })
  t.equal(stale.status, 200)
  t.same((await api('PATCH', lp, { ...owner.auth, 'if-match': '"1"' }, { name: 'Again' })).body.code, 'APP_TRACKER_VERSION_MISMATCH', 'If-Match of an older version: 412')
  t.equal((await api('PATCH', lp, { ...owner.auth, 'if-match': 'soon' }, { name: 'Again' })).body.code, 'APP_INVALID_IF_MATCH')
  t.equal((await api('PATCH', lp, { ...owner.auth, 'if-match': stale.headers.etag as string }, { name: 'Again' })).status, 200)
  t.same((await must('GET', `${base}/browse/WEB-1`, viewer.auth)).key, 'SITE-1', 'the old key finds the item under its new key')
  t.equal((await api('POST', `${base}/projects`, owner.auth, { name: 'Other', identifier: 'web' })).body.code, 'APP_TRACKER_IDENTIFIER_TAKEN', 'a former identifier stays taken')

  // Private: non-members do not see it, nor its keys.
  await must('PATCH', lp, owner.auth, { visibility: 'private' })
  t.same((await api('GET', `${lp}/work-items`, viewer.auth)).body.code, 'APP_TRACKER_PROJECT_NOT_FOUND')
  t.same((await api('GET', `${base}/browse/SITE-1`, viewer.auth)).body.code, 'APP_TRACKER_ITEM_NOT_FOUND', 'its keys are keys of nothing to them')
  t.same((await must('GET', `${base}/projects`, viewer.auth)).items, [], 'nor is it listed')
  t.same((await must('GET', `${base}/projects`, guest.auth)).items.map((p: { role: string }) => p.role), ['guest'])

  // Members: added only if they can use the tracker; roles change.
  t.same((await api('POST', `${lp}/members`, owner.auth, { userId: viewer.id, role: 'member' })).status, 201)
  t.same((await api('POST', `${lp}/members`, owner.auth, { userId: viewer.id, role: 'member' })).body.code, 'APP_TRACKER_ALREADY_MEMBER')
  t.same((await api('POST', `${lp}/members`, owner.auth, { userId: 'stranger', role: 'member' })).body.details.fields[0].path, 'body.userId')
  t.equal((await must('PATCH', `${lp}/members/${viewer.id}`, owner.auth, { role: 'guest' })).role, 'guest')
  t.same((await must('GET', `${lp}/members`, viewer.auth)).items.length, 4)
  t.same((await api('DELETE', `${lp}/members/${viewer.id}`, owner.auth)).body, { success: true, data: { id: viewer.id, deleted: true } })

  // Archived: read-only until restored.
  t.ok((await must('POST', `${lp}/archive`, owner.auth)).archivedAt)
  t.same((await api('POST', `${lp}/work-items`, member.auth, { title: 'No' })).body.code, 'APP_TRACKER_PROJECT_ARCHIVED')
  t.same((await must('GET', `${base}/projects?archived=true`, owner.auth)).items.map((p: { id: string }) => p.id), [lpId])
  t.equal((await must('POST', `${lp}/restore`, owner.auth)).archivedAt, null)
  t.equal((await api('POST', `${lp}/work-items`, member.auth, { title: 'Yes' })).status, 201)

  // Deleted: gone at once; the platform project's deletion takes the rest.
  const other = await must('POST', `${base}/projects`, owner.auth, { name: 'Ops', identifier: 'OPS' })
  t.same((await api('DELETE', lp, owner.auth)).body, { success: true, data: { id: lpId, deleted: true } })
  t.same((await api('GET', lp, owner.auth)).body.code, 'APP_TRACKER_PROJECT_NOT_FOUND')
  t.equal((await api('POST', `${base}/projects`, owner.auth, { name: 'Again', identifier: 'WEB' })).status, 201, 'its identifiers are free again')
  t.equal((await api('DELETE', `/api/projects/${projectId}`, owner.auth)).status, 200)
  t.equal(await app.tracker.projects.record(other.id), null, 'deleting the platform project purged its tracker projects')
})

t.test('a work item by key or by id, read shared: each answer the stored state, each refusal at once', async (t) => {
  const { owner, member, guest, base, lp, api, must } = await trackerSetup(t)
  const mine = await must('POST', `${lp}/work-items`, guest.auth, { title: 'By the guest' })
  const theirs = await must('POST', `${lp}/work-items`, member.auth, { title: 'By a member' })
  const byKey = `${base}/browse/${theirs.key as string}`
  const byId = `${lp}/work-items/${theirs.id as string}`
  // Twice: the second answer is the view the first one made and wrote.
  for (const round of ['first', 'again']) {
    for (const url of [byKey, byId]) {
      const res = await api('GET', url, member.auth)
      t.same([res.status, res.headers.etag, res.body.data], [200, '"1"', theirs], `${round}: ${url === byKey ? 'by key' : 'by id'}`)
    }
  }
  t.equal((await must('GET', `${base}/browse/${mine.key as string}`, guest.auth)).id, mine.id, 'a guest reads her own item by key')
  // Lists asked twice (the second is the remembered page of the store): each caller's own view, a new item at once.
  const list = `${lp}/work-items?limit=50&filter=${encodeURIComponent(JSON.stringify({ field: 'priority', op: 'eq', value: 'none' }))}`
  const listed = async (auth: Record<string, string>): Promise<unknown[]> => ((await must('GET', list, auth)).items as Array<{ id: string }>).map((item) => item.id)
  for (const round of ['first', 'again']) {
    t.same(await listed(member.auth), [theirs.id, mine.id], `${round}: a member lists every item`)
    t.same(await listed(guest.auth), [mine.id], `${round}: a guest lists only hers`)
  }
  const third = await must('POST', `${lp}/work-items`, member.auth, { title: 'Created after the lists' })
  t.same(await listed(member.auth), [third.id, theirs.id, mine.id], 'an item created after a warm list is listed at once')
  t.same(await listed(guest.auth), [mine.id], 'and not to the guest')
  for (const url of [byKey, byId]) {
    t.same((await api('GET', url, guest.auth)).body.code, 'APP_TRACKER_ITEM_NOT_FOUND', `a guest does not see another's item: ${url}`)
  }

  const changed = await must('PATCH', byId, member.auth, { title: 'Renamed' })
  t.same(await must('GET', byKey, member.auth), changed, 'a change is read at once')
  await must('PATCH', lp, owner.auth, { guestsSeeAllItems: true })
  t.same(await must('GET', byKey, guest.auth), changed, 'a guest sees all once the project lets her')
  t.same(await listed(guest.auth), [third.id, theirs.id, mine.id], 'and lists all')
  await must('PATCH', lp, owner.auth, { identifier: 'site', visibility: 'private' })
  t.equal((await must('GET', `${base}/browse/SITE-${theirs.number as number}`, member.auth)).id, theirs.id, 'the new key')
  t.equal((await must('GET', byKey, member.auth)).key, `SITE-${theirs.number as number}`, 'the old key, as before the rename')

  await must('DELETE', `${lp}/members/${member.id}`, owner.auth)
  t.same((await api('GET', byKey, member.auth)).body.code, 'APP_TRACKER_ITEM_NOT_FOUND', 'a member removed from a private project: at once')
  t.same((await api('GET', byId, member.auth)).body.code, 'APP_TRACKER_PROJECT_NOT_FOUND')
  t.same((await api('GET', list, member.auth)).body.code, 'APP_TRACKER_PROJECT_NOT_FOUND', 'nor lists it, after warm lists')
  await must('DELETE', lp, owner.auth)
  t.same((await api('GET', byKey, owner.auth)).body.code, 'APP_TRACKER_ITEM_NOT_FOUND', 'a deleted project\'s keys are keys of nothing at once')
  t.same((await api('GET', `${base}/browse/SITE-1`, owner.auth)).body.code, 'APP_TRACKER_ITEM_NOT_FOUND')
})
