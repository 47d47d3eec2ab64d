import t from 'tap'
import ExcelJS from 'exceljs'
import { SignedLinks } from '../../../services/platform/signed-links.js'
import { TRACKER_EXPORTS_COLLECTION, type ExportRecord } from '../../../services/tracker/exports.js'
import { TRACKER_COLLECTIONS, type ItemRecord } from '../../../services/tracker/records.js'
import { trackerSetup, type TrackerSetup } from './fixtures.js'

/**
 * Exports through the routes: the app's own job worker runs them, the file
 * is fetched through the signed link with no credential, and read back
 * (CSV and JSON parsed, XLSX with exceljs).
 */

async function until (what: string, check: () => Promise<boolean>, seconds = 60): Promise<void> {
  const end = Date.now() + seconds * 1000
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

/** Asks for an export as `auth`, waits for its job, and answers its final view. */
async function exported (setup: TrackerSetup, auth: Record<string, string>, body: Record<string, unknown>) {
  const { api, base } = setup
  const queued = await api('POST', `${base}/exports`, auth, body)
  if (queued.status !== 202) throw new Error(`export refused: ${JSON.stringify(queued.body)}`)
  const id = queued.body.data.id as string
  let view: Record<string, any> = queued.body.data
  await until('the export', async () => {
    view = (await api('GET', `${base}/exports/${id}`, auth)).body.data
    return view.status === 'completed' || view.status === 'failed'
  })
  return { queued: queued.body.data, view }
}

async function fetchFile (setup: TrackerSetup, url: string) {
  const res = await setup.app.inject({ method: 'GET', url })
  return { status: res.statusCode, headers: res.headers, raw: res.rawPayload, body: res.body }
}

/** RFC 4180 rows, enough for the tests' cells (quotes, commas, newlines). */
function parseCsv (text: string): string[][] {
  const rows: string[][] = []
  let row: string[] = []
  let cell = ''
  let quoted = false
  for (let i = 0; i < text.length; i++) {
    const c = text[i]
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') { cell += '"'; i++ } else if (c === '"') quoted = false
      else cell += c
    } else if (c === '"') quoted = true
    else if (c === ',') { row.push(cell); cell = '' } else if (c === '\r' && text[i + 1] === '\n') { row.push(cell); rows.push(row); row = []; cell = ''; i++ } else cell += c
  }
  return rows
}

t.test('exports: queued, processed by the worker, the filter and visibility applied, downloaded through a signed link', async (t) => {
  const setup = await trackerSetup(t)
  const { app, base, lp, lpId, owner, member, guest, must, api } = setup
  const urgent = await must('POST', `${lp}/work-items`, owner.auth, { title: '=HYPERLINK("x"), "quoted"', priority: 'urgent' })
  await must('POST', `${lp}/work-items`, owner.auth, { title: 'Calm', priority: 'low' })
  await must('POST', `${lp}/work-items`, guest.auth, { title: 'The guest\'s own', priority: 'urgent' })
  await must('POST', `${lp}/work-items/${urgent.id}/comments`, member.auth, { body: 'Line one,\nline two' })

  const csv = await exported(setup, owner.auth, { lpId, format: 'csv', filter: { field: 'priority', op: 'eq', value: 'urgent' }, comments: true })
  t.match(csv.queued, { status: 'queued', format: 'csv', download: null })
  t.match(csv.view, { status: 'completed', itemCount: 2, error: null, download: { url: /\/exports\/.+\/download\?expires=\d+&signature=[0-9a-f]{64}$/ } })
  const file = await fetchFile(setup, csv.view.download.url)
  t.equal(file.status, 200, 'the link alone is enough: no credential')
  t.match(file.headers, { 'content-type': /^text\/csv/, 'content-disposition': /^attachment; filename=".+\.csv"$/ })
  const rows = parseCsv(file.body.replace(/^\uFEFF/, ''))
  t.equal(rows[0][0], 'Key')
  t.equal(rows[0].at(-1), 'Comments')
  t.same(rows.slice(1).map((row) => row[0]).sort(), ['WEB-1', 'WEB-3'], 'only what the filter matches')
  const first = rows.find((row) => row[0] === 'WEB-1')!
  t.equal(first[1], '\'=HYPERLINK("x"), "quoted"', 'a formula-like cell is defused, quotes and commas survive')
  t.match(first.at(-1), /Line one,\nline two/, 'the comment is there, newline and all')

  const mine = await exported(setup, guest.auth, { lpId, format: 'json' })
  const json = JSON.parse((await fetchFile(setup, mine.view.download.url)).body)
  t.same(json.items.map((item: { key: string }) => item.key), ['WEB-3'], 'a guest exports only what a guest sees')
  t.match(json, { project: { identifier: 'WEB' }, filter: null })
  t.notOk('comments' in json.items[0], 'no comments unless asked')

  const sheets = await exported(setup, owner.auth, { lpId, format: 'xlsx', comments: true })
  const workbook = new ExcelJS.Workbook()
  await workbook.xlsx.load((await fetchFile(setup, sheets.view.download.url)).raw as unknown as ArrayBuffer)
  t.equal(workbook.getWorksheet('Work items')!.rowCount, 4, 'a header and the three items the owner sees')
  t.same(workbook.getWorksheet('Comments')!.getRow(2).values, [undefined, 'WEB-1', member.id, workbook.getWorksheet('Comments')!.getRow(2).getCell(3).value, 'Line one,\nline two'])
  t.equal(workbook.getWorksheet('Work items')!.getRow(2).getCell(2).value, '=HYPERLINK("x"), "quoted"', 'a string cell in XLSX, never a formula')

  // History: each user sees their own, newest first.
  t.same((await must('GET', `${base}/exports`, owner.auth)).items.map((view: { id: string }) => view.id), [sheets.view.id, csv.view.id])
  t.same((await must('GET', `${base}/exports`, guest.auth)).items.map((view: { id: string }) => view.id), [mine.view.id])
  t.match(await api('GET', `${base}/exports/${csv.view.id as string}`, member.auth), { status: 404, body: { code: 'APP_TRACKER_EXPORT_NOT_FOUND' } })

  // Links: altered, expired, or for another export.
  const url = new URL(csv.view.download.url as string, 'http://localhost')
  const path = url.pathname
  const signature = url.searchParams.get('signature')!
  const expires = Number(url.searchParams.get('expires'))
  const links = new SignedLinks(app.deriveSecretKey('tracker:export-links'))
  const pastExpiry = Math.floor(Date.now() / 1000) - 1
  const subject = `${setup.projectId}:${csv.view.id as string}`
  const refused = [
    ['an altered signature', `${path}?expires=${expires}&signature=${signature.replace(/^./, signature[0] === 'a' ? 'b' : 'a')}`],
    ['a later expiry', `${path}?expires=${expires + 3600}&signature=${signature}`],
    ['an expired link, rightly signed', `${path}?expires=${pastExpiry}&signature=${links.sign(subject, pastExpiry)}`],
    ['another export\'s path', `${base}/exports/${mine.view.id as string}/download?expires=${expires}&signature=${signature}`]
  ]
  for (const [name, link] of refused) t.match(await fetchFile(setup, link), { status: 403, body: /APP_TRACKER_EXPORT_LINK_INVALID/ }, name)

  // Refused at once: a filter outside the grammar, a tracker project the caller cannot see, a bad format.
  t.match(await api('POST', `${base}/exports`, owner.auth, { lpId, format: 'csv', filter: { field: 'nope', op: 'eq', value: 1 } }), { status: 400, body: { code: 'APP_TRACKER_INVALID_FILTER' } })
  t.match(await api('POST', `${base}/exports`, owner.auth, { lpId: 'nope', format: 'csv' }), { status: 404, body: { code: 'APP_TRACKER_PROJECT_NOT_FOUND' } })
  t.match(await api('POST', `${base}/exports`, owner.auth, { lpId, format: 'pdf' }), { status: 400, body: { code: 'APP_VALIDATION_FAILED' } })
  t.match(await api('POST', `${base}/exports`, setup.outsider.auth, { lpId, format: 'csv' }), { status: 404, body: { code: 'APP_PROJECT_NOT_FOUND' } })

  // The sweep: an export whose time is up goes, with its file.
  const records = app.store.collection<ExportRecord>(TRACKER_EXPORTS_COLLECTION)
  const stored = (await records.findOne({ _id: csv.view.id }))!
  t.ok(await app.files.store.stat(stored.fileKey!), 'the file is in the store')
  await records.updateOne({ _id: stored._id }, { $set: { expiresAt: new Date(Date.now() - 1000) } })
  t.match(await app.tracker.exports.sweep(), { deleted: 1 })
  t.equal(await app.files.store.stat(stored.fileKey!), null, 'its file is gone')
  t.match(await fetchFile(setup, csv.view.download.url), { status: 404, body: /APP_TRACKER_EXPORT_NOT_FOUND/ })
  t.same((await must('GET', `${base}/exports`, owner.auth)).items.map((view: { id: string }) => view.id), [sheets.view.id], 'and so is it from the history')
  t.match(await api('DELETE', `${base}/exports/${mine.view.id as string}`, guest.auth), { status: 200, body: { data: { deleted: true } } })

  // The link is only as good as its owner's access when it is used.
  const kept = await exported(setup, member.auth, { lpId, format: 'csv' })
  t.equal((await fetchFile(setup, kept.view.download.url)).status, 200)
  await must('DELETE', `/api/organizations/${setup.orgId}/members/${member.id}`, owner.auth)
  t.match(await fetchFile(setup, kept.view.download.url), { status: 404 }, 'a member removed since is refused')
})

t.test('an export of 10,000 items to XLSX opens with exceljs and holds every row', async (t) => {
  const setup = await trackerSetup(t)
  const { app, base, owner, must } = setup
  const big = await must('POST', `${base}/projects`, owner.auth, { name: 'Big', identifier: 'big' })
  const template = await must('POST', `${base}/projects/${big.id as string}/work-items`, owner.auth, { title: 'Item 1', priority: 'high' })
  const items = app.store.collection<ItemRecord>(TRACKER_COLLECTIONS.items)
  const stored = (await items.findOne({ _id: template.id }))!
  const copies: ItemRecord[] = []
  for (let seq = 2; seq <= 10_000; seq++) copies.push({ ...stored, _id: `${stored._id}x${seq}`, seq, title: `Item ${seq}`, outbox: null })
  for (let i = 0; i < copies.length; i += 2000) await items.insertMany(copies.slice(i, i + 2000))

  const { view } = await exported(setup, owner.auth, { lpId: big.id, format: 'xlsx' })
  t.match(view, { status: 'completed', itemCount: 10_000 })
  const file = await fetchFile(setup, view.download.url)
  t.match(file.headers, { 'content-type': 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet' })
  const workbook = new ExcelJS.Workbook()
  await workbook.xlsx.load(file.raw as unknown as ArrayBuffer)
  const sheet = workbook.getWorksheet('Work items')!
  t.equal(sheet.rowCount, 10_001, 'a header and every item')
  t.same([sheet.getRow(1).getCell(1).value, sheet.getRow(1).getCell(2).value], ['Key', 'Title'])
  const keys = new Set<string>()
  sheet.eachRow((row, number) => { if (number > 1) keys.add(String(row.getCell(1).value)) })
  t.equal(keys.size, 10_000, 'every key once')
  t.ok(keys.has('BIG-1') && keys.has('BIG-10000'))
  t.same([sheet.getRow(10_001).getCell(1).value, sheet.getRow(10_001).getCell(2).value, sheet.getRow(10_001).getCell(5).value], ['BIG-10000', 'Item 10000', 'high'])
})
