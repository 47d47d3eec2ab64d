import t from 'tap'
import { trackerSetup } from './fixtures.js'

type Hit = { type: string, matchedBy: string, id: string, title: string, snippet: { field: string, text: string, highlights: Array<{ start: number, end: number }> }, workItem?: { key: string } }

/**
 * `GET /tracker/search` (services/tracker/search.ts): keys, key prefixes and
 * numbers first, then ranked text; what the caller may not read is never
 * searched, so pages stay full.
 */
t.test('search: keys, prefixes, numbers, comments, renames, snippets and facets', async (t) => {
  const { owner, member, base, lp, api, must } = await trackerSetup(t)
  const search = async (q: string, extra = '', auth = owner.auth) => await api('GET', `${base}/search?q=${encodeURIComponent(q)}${extra}`, auth)
  const first = await must('POST', `${lp}/work-items`, member.auth, { title: 'Login page crashes on Safari', description: 'Open the login page in **Safari**' })
  const second = await must('POST', `${lp}/work-items`, member.auth, { title: 'Dashboard is slow' })
  for (let n = 3; n <= 12; n++) await must('POST', `${lp}/work-items`, member.auth, { title: `Filler ${n}` })
  await must('POST', `${lp}/work-items/${second.id as string}/comments`, owner.auth, { body: 'A flamingo was seen near the charts' })
  await must('POST', `${lp}/pages`, owner.auth, { title: 'Release notes', content: 'The login flow changed in March' })

  const byKey = (await search('web-1')).body.data
  t.same(byKey.items.map((hit: Hit) => [hit.matchedBy, hit.workItem?.key]), [['key', 'WEB-1'], ['keyPrefix', 'WEB-10'], ['keyPrefix', 'WEB-11'], ['keyPrefix', 'WEB-12']], 'the key first, then the numbers it starts')
  t.same((await search('WEB-')).body.data.items.length, 12, 'an identifier and a dash: the project\'s items')
  const byNumber = (await search('2')).body.data.items as Hit[]
  t.same([byNumber[0].matchedBy, byNumber[0].workItem?.key], ['number', 'WEB-2'])

  const flamingo = (await search('flamingo')).body.data
  t.same(flamingo.items.map((hit: Hit) => [hit.type, hit.workItem?.key]), [['comment', 'WEB-2']], 'a word only in a comment finds the comment and its item')
  t.same(flamingo.facets.type, { workItem: 0, intake: 0, comment: 1, page: 0 })

  const login = (await search('login')).body.data
  t.same(login.items.map((hit: Hit) => [hit.type, hit.id]), [['workItem', first.id], ['page', login.items[1].id]], 'a title ranks above a page\'s text')
  const top = login.items[0] as Hit
  t.equal(top.snippet.field, 'title')
  t.equal(top.snippet.text.slice(top.snippet.highlights[0].start, top.snippet.highlights[0].end), 'Login')
  t.same(login.facets.type, { workItem: 1, intake: 0, comment: 0, page: 1 })
  t.same((await search('login', '&type=page')).body.data.items.map((hit: Hit) => hit.type), ['page'])
  t.same((await search('safar')).body.data.items.map((hit: Hit) => hit.id), [first.id], 'the last word as the start of a word')
  t.same((await search('"login')).status, 200, 'an unbalanced quote is only a separator')
  t.same((await search('login OR NEAR(dashboard')).body.data.items, [], 'FTS operators are words here: nothing holds them all')

  // A key from before the project's identifier was renamed still finds the item.
  await must('PATCH', lp, owner.auth, { identifier: 'SITE' })
  t.same((await search('WEB-1')).body.data.items[0].workItem.key, 'SITE-1')

  // The filter grammar narrows the search itself.
  const filter = encodeURIComponent(JSON.stringify({ field: 'title', op: 'contains', value: 'dashboard' }))
  t.same((await search('flamingo', `&filter=${filter}`)).body.data.items.length, 1)
  t.same((await search('login', `&filter=${filter}`)).body.data.items, [], 'pages are left out under a filter, items the filter refuses too')
})

t.test('search never returns what the caller may not read, and pages stay full', async (t) => {
  const { owner, member, viewer, guest, base, lp, api, must } = await trackerSetup(t)
  const search = async (auth: Record<string, string>, q: string, extra = '') => await api('GET', `${base}/search?q=${encodeURIComponent(q)}${extra}`, auth)
  // Ten items for the word; the three the guest may see rank last (the others say it twice).
  const mine: string[] = []
  for (let n = 1; n <= 10; n++) {
    const assigned = n % 3 === 0
    const item = await must('POST', `${lp}/work-items`, member.auth, { title: assigned ? `zebra ${n}` : `zebra zebra ${n}`, assigneeIds: assigned ? [guest.id] : [] })
    if (assigned) mine.push(item.id)
  }
  // A private tracker project the viewer is no member of.
  const secret = await must('POST', `${base}/projects`, owner.auth, { name: 'Secret', identifier: 'SEC', visibility: 'private' })
  const hidden = await must('POST', `${base}/projects/${secret.id as string}/work-items`, owner.auth, { title: 'zebra secret plan' })
  await must('POST', `${base}/projects/${secret.id as string}/work-items/${hidden.id as string}/comments`, owner.auth, { body: 'zebra notes' })

  const all = (await search(owner.auth, 'zebra', '&limit=50')).body.data
  t.equal(all.facets.type.workItem, 11, 'an admin finds every item')
  t.ok(all.items.some((hit: Hit) => hit.id === hidden.id))

  const viewed = (await search(viewer.auth, 'zebra', '&limit=50')).body.data
  t.equal(viewed.items.length, 10, 'a reader of one tracker project finds only its items')
  t.notOk(viewed.items.some((hit: Hit) => hit.id === hidden.id || hit.type === 'comment'))
  t.same(viewed.facets.type, { workItem: 10, intake: 0, comment: 0, page: 0 })
  t.same((await search(viewer.auth, 'SEC-1')).body.data.items, [], 'a key of a project the caller may not see finds nothing')
  t.equal((await search(viewer.auth, 'zebra', `&lpId=${secret.id as string}`)).body.code, 'APP_TRACKER_PROJECT_NOT_FOUND')

  const firstPage = (await search(guest.auth, 'zebra', '&limit=2')).body.data
  t.same(firstPage.items.length, 2, 'the guest\'s first page is full although their items rank last')
  t.same(firstPage.facets, { type: { workItem: 3, intake: 0, comment: 0, page: 0 }, capped: false }, 'the facet counts only what the guest may read')
  const secondPage = (await search(guest.auth, 'zebra', `&limit=2&cursor=${encodeURIComponent(firstPage.nextCursor as string)}`)).body.data
  t.same([...firstPage.items, ...secondPage.items].map((hit: Hit) => hit.id).sort(), [...mine].sort())
  t.equal(secondPage.nextCursor, null)
  t.equal(secondPage.facets, null, 'the facet is counted on the first page only')
  t.same((await search(guest.auth, '1')).body.data.items, [], 'a number finds no item the guest may not see')
  t.same((await search(guest.auth, '3')).body.data.items.map((hit: Hit) => hit.id), [mine[0]])
  t.equal((await search(guest.auth, 'zebra', `&cursor=${encodeURIComponent(firstPage.nextCursor as string)}&limit=3`)).status, 200, 'the cursor is bound to the query, not the page size')
  t.equal((await search(guest.auth, 'other', `&cursor=${encodeURIComponent(firstPage.nextCursor as string)}`)).status, 400, 'a cursor of another query is refused')
})

t.test('a common word of another tracker project changes neither the results nor the counts of this one', async (t) => {
  const { owner, member, viewer, base, lp, lpId, api, must } = await trackerSetup(t)
  const search = async (auth: Record<string, string>, q: string, extra = '') => await api('GET', `${base}/search?q=${encodeURIComponent(q)}${extra}`, auth)
  const ours: string[] = []
  for (let n = 1; n <= 3; n++) ours.push((await must('POST', `${lp}/work-items`, member.auth, { title: `heron sighting ${n}`, description: 'seen by the lake' })).id as string)
  await must('POST', `${lp}/work-items/${ours[0]}/comments`, member.auth, { body: 'a heron again' })
  // A private project the viewer may not read, whose 70 items say the word twice and so rank above ours: the first
  // rung of the ranking (64 rows) holds none of ours.
  const other = await must('POST', `${base}/projects`, owner.auth, { name: 'Birds', identifier: 'BRD', visibility: 'private' })
  for (let n = 1; n <= 70; n++) {
    const item = await must('POST', `${base}/projects/${other.id as string}/work-items`, owner.auth, { title: `heron heron ${n}` })
    if (n <= 5) await must('POST', `${base}/projects/${other.id as string}/work-items/${item.id as string}/comments`, owner.auth, { body: 'heron heron heron' })
  }
  const expected = { type: { workItem: 3, intake: 0, comment: 1, page: 0 }, capped: false }
  const narrowed = (await search(owner.auth, 'heron', `&lpId=${lpId as string}&limit=50`)).body.data
  t.same(narrowed.items.filter((hit: Hit) => hit.type === 'workItem').map((hit: Hit) => hit.id).sort(), [...ours].sort(), 'narrowed to this project: its items only')
  t.same(narrowed.facets, expected, 'and its counts only')
  const viewed = (await search(viewer.auth, 'heron', '&limit=2')).body.data
  t.equal(viewed.items.length, 2, 'a reader of this project alone gets a full page')
  t.ok(viewed.items.every((hit: Hit) => hit.type === 'comment' || ours.includes(hit.id)))
  t.same(viewed.facets, expected, 'counted without the other project\'s hits')
  const all = (await search(owner.auth, 'heron')).body.data
  t.same(all.facets.type, { workItem: 73, intake: 0, comment: 6, page: 0 }, 'one who reads both counts both')
})

t.test('search refuses bad input with 400 naming the field', async (t) => {
  const { owner, outsider, base, api } = await trackerSetup(t)
  const cases: Array<[string, string, string, string]> = [
    ['no q', '', 'APP_VALIDATION_FAILED', 'querystring.q'],
    ['an empty q', 'q=', 'APP_VALIDATION_FAILED', 'querystring.q'],
    ['a q with no words', `q=${encodeURIComponent('" (*')}`, 'APP_TRACKER_INVALID_VALUE', 'query.q'],
    ['a limit over the maximum', 'q=a&limit=51', 'APP_VALIDATION_FAILED', 'querystring.limit'],
    ['an unknown type', 'q=a&type=user', 'APP_VALIDATION_FAILED', 'querystring.type'],
    ['a filter that is not JSON', 'q=a&filter=%7B', 'APP_TRACKER_INVALID_FILTER', 'query.filter'],
    ['an unknown parameter', 'q=a&sort=x', 'APP_VALIDATION_FAILED', 'querystring.sort']
  ]
  for (const [name, query, code, path] of cases) {
    const res = await api('GET', `${base}/search?${query}`, owner.auth)
    t.same([res.status, res.body.code, res.body.details?.fields?.[0]?.path], [400, code, path], name)
  }
  t.equal((await api('GET', `${base}/search?q=a&cursor=nonsense`, owner.auth)).status, 400)
  t.equal((await api('GET', `${base}/search?q=a`, outsider.auth)).status, 404)
})
