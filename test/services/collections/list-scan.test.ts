import t, { type Test } from 'tap'
import { buildTestApp, type TestApp } from '../../helper.js'
import { QUERY_LIMITS } from '../../../services/collections/query.js'
import type { AccessRuleT } from '../../../schemas/collections.js'

/**
 * Lists whose filter no index serves examine at most QUERY_LIMITS.maxExamined
 * records per page: the page holds the matches among them and nextCursor
 * continues the scan. Followed to the end, the pages give exactly the answer
 * of one unbounded query.
 */
const BOUND = QUERY_LIMITS.maxExamined
const SIZE = 2 * BOUND + BOUND / 2

interface Page { items: Array<{ id: string }>, nextCursor: string | null }

async function catalog (t: Test, rule: AccessRuleT = { requireAuth: false }) {
  const app = await buildTestApp(t)
  const user = await app.identity.users.register({ email: 'owner@example.com', password: 'correct horse battery', name: 'Owner' })
  const org = await app.orgs.organizations.create({ userId: user.id }, { name: 'Shop' })
  const project = await app.projects.create(org.id, user.id, { name: 'Shop' })
  await app.collections.definitions.create(project.id, {
    name: 'items',
    fields: [{ name: 'title', type: 'text' }, { name: 'category', type: 'text' }, { name: 'price', type: 'number' }, { name: 'shelf', type: 'text' }],
    indexes: [{ fields: ['shelf'] }],
    methods: { list: { enabled: true, rule } }
  })
  const now = new Date()
  // Rare records bunched at both ends and one in the middle; prices repeat and some are missing, to test ties and nulls.
  const rare = new Set([3, 5, 8, BOUND - 1, BOUND, BOUND + 1, SIZE - 2])
  await app.store.collection(`p_${project.id}_items`).insertMany(Array.from({ length: SIZE }, (_, i) => ({
    title: `item ${i}`,
    category: rare.has(i) ? 'rare' : i % 2 === 0 ? 'even' : 'odd',
    ...(i % 7 === 0 ? {} : { price: i % 13 }),
    shelf: `s${i % 50}`,
    createdAt: now,
    updatedAt: now,
    version: 1
  })))
  return { app, url: `/api/p/${project.id}/items`, collection: app.store.collection(`p_${project.id}_items`) }
}

async function page (app: TestApp, url: string): Promise<{ status: number, body: { data: Page, code?: string } }> {
  const res = await app.inject({ method: 'GET', url })
  return { status: res.statusCode, body: res.json() }
}

/** Every page of a query, following nextCursor to the end. */
async function allPages (app: TestApp, base: string, query: string): Promise<Page[]> {
  const pages: Page[] = []
  let cursor: string | null = null
  do {
    const res = await page(app, `${base}?${query}${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`)
    if (res.status !== 200) throw new Error(`${res.status} ${JSON.stringify(res.body)}`)
    pages.push(res.body.data)
    cursor = res.body.data.nextCursor
  } while (cursor !== null && pages.length < 100)
  return pages
}

const filterParam = (filter: unknown): string => `filter=${encodeURIComponent(JSON.stringify(filter))}`

/** `-price,title` as the Store's sort, ending with the id as every list does. */
function storeSort (sort: string | undefined): Record<string, 1 | -1> {
  const keys = (sort ?? '').split(',').filter((key) => key !== '').map((key): [string, 1 | -1] => key.startsWith('-') ? [key.slice(1), -1] : [key, 1])
  const named = Object.fromEntries(keys.map(([key, dir]) => [key === 'id' ? '_id' : key, dir]))
  return { ...named, _id: named._id ?? 1 }
}

t.test('a filter that matches nothing answers a page per bound, each empty with a cursor, then the end', async (t) => {
  const { app, url } = await catalog(t)
  const pages = await allPages(app, url, filterParam({ category: 'none' }))
  t.same(pages.map((one) => [one.items.length, one.nextCursor !== null]), [[0, true], [0, true], [0, false]], `${SIZE} records, ${BOUND} examined per page`)
})

t.test('cursor pages continue across bounded pages and together equal the unbounded answer', async (t) => {
  const { app, url, collection } = await catalog(t)
  const cases: Array<[string, Record<string, unknown>, string | undefined, number]> = [
    ['rare, default order', { category: 'rare' }, undefined, 20],
    ['rare, small pages', { category: 'rare' }, undefined, 2],
    ['rare, newest first', { category: 'rare' }, '-id', 3],
    ['rare by price, nulls and ties', { category: 'rare' }, 'price', 2],
    ['rare by price descending', { category: 'rare' }, '-price,title', 4],
    ['a range and an $or', { $or: [{ category: 'rare' }, { price: { $gt: 11 }, title: { $regex: '7$' } }] }, undefined, 25]
  ]
  for (const [name, filter, sort, limit] of cases) {
    const pages = await allPages(app, url, `${filterParam(filter)}&limit=${limit}${sort === undefined ? '' : `&sort=${sort}`}`)
    const expected = (await collection.find(filter, { sort: storeSort(sort) }).toArray()).map((doc) => doc._id)
    t.same(pages.flatMap((one) => one.items.map((item) => item.id)), expected, `${name}: every match once, in order`)
    t.ok(pages.every((one) => one.items.length <= limit), `${name}: no page holds more than the limit`)
    t.ok(pages.length >= Math.ceil(expected.length / limit), `${name}: ${pages.length} pages`)
  }
  const [first] = await allPages(app, url, `${filterParam({ category: 'rare' })}&limit=20`)
  t.equal(first.items.length, 4, 'the first page is short: only the matches among the first records examined')
  t.not(first.nextCursor, null, 'and says where to go on')
})

t.test('filters that match often fill their pages within the bound', async (t) => {
  const { app, url } = await catalog(t)
  const res = await page(app, `${url}?${filterParam({ category: 'even' })}&limit=200`)
  t.equal(res.body.data.items.length, 200)
  t.not(res.body.data.nextCursor, null)
})

t.test('a filter an index serves is not bounded: one page finds what lies beyond the bound', async (t) => {
  const { app, url } = await catalog(t)
  const res = await page(app, `${url}?${filterParam({ shelf: 's7', category: 'rare' })}`)
  t.same([res.status, res.body.data.items.length, res.body.data.nextCursor], [200, 0, null], 'one empty page, and the end')
  const late = await page(app, `${url}?${filterParam({ shelf: `s${(SIZE - 2) % 50}`, category: 'rare' })}`)
  t.same([late.body.data.items.length, late.body.data.nextCursor], [1, null], 'the last rare record, found in one page')
  const counted = await page(app, `${url}?${filterParam({ category: 'rare' })}&count=true&limit=1`)
  t.equal((counted.body.data as Page & { total: number }).total, 7, 'count still counts every match')
})

t.test('an offset page must complete within the bound, or is refused with a way on', async (t) => {
  const { app, url } = await catalog(t)
  const dense = await page(app, `${url}?${filterParam({ category: 'odd' })}&offset=${BOUND / 2}&limit=10`)
  t.same([dense.status, dense.body.data.items.length], [200, 10], 'offset + the bound records are examined at most')
  const sparse = await page(app, `${url}?${filterParam({ category: 'rare' })}&offset=2&limit=10`)
  t.same([sparse.status, sparse.body.code], [400, 'APP_SCAN_LIMIT'])
  // Every record has a createdAt: a range on it that narrows nothing leaves the scan bounded, built-in order index or not.
  const riding = await page(app, `${url}?${filterParam({ createdAt: { $gte: '1970-01-01' }, title: { $regex: '^item 3$' } })}&offset=2&limit=10`)
  t.same([riding.status, riding.body.code], [400, 'APP_SCAN_LIMIT'], 'a createdAt range does not lift the bound')
  const ridingPages = await allPages(app, url, `${filterParam({ createdAt: { $gte: '1970-01-01' }, category: 'rare' })}&limit=20`)
  t.same(ridingPages.map((one) => one.items.length), [4, 2, 1], 'nor does it on cursor pages: each examines the bound')
  const served = await page(app, `${url}?${filterParam({ shelf: 's3' })}&offset=10&limit=10`)
  t.same([served.status, served.body.data.items.length], [200, 10], 'an index-served filter pages by offset as before')
})

t.test('the window counts only what the rule lets the caller see, so a short page tells nothing of hidden records', async (t) => {
  const { app, url } = await catalog(t, { requireAuth: false, filter: { category: 'rare' } })
  // Seven visible records spread over 1,250: counted over every record, the pages would come back 4, 2, 1.
  t.same((await allPages(app, url, 'limit=20')).map((one) => one.items.length), [7], 'the rule alone')
  const scanned = await allPages(app, url, `limit=20&${filterParam({ title: { $regex: '^item' } })}`)
  t.same(scanned.map((one) => one.items.length), [7], 'a client filter no index serves')
  t.equal(scanned[0].nextCursor, null)
})
