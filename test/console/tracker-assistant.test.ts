import t from 'tap'
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { chromium } from 'playwright-core'
import { tempDir } from '../helper.js'
import { CHROMIUM, ensureConsoleBuilt, keepOnLoopback, screenRecorder, waitUntil } from './browser.js'
import { assistantSetup } from '../routes/assistant/fixtures.js'

await ensureConsoleBuilt()

// The tracker and assistant screens, driven as a user would, on the assistant tests' real server and scripted model provider.
t.test('the console\'s tracker and assistant screens in headless Chromium', async (t) => {
  const s = await assistantSetup(t)
  const screens = join(tempDir(t, 'plinth-console-tracker-'), 'screens')
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] })
  t.teardown(async () => { await browser.close() })
  const page = await (await browser.newContext()).newPage()
  const hosts = await keepOnLoopback(page)
  const recorder = screenRecorder(page, screens)
  const screen = recorder.screen

  await page.goto(`${s.origin}/console/`)
  await page.getByLabel('Email').fill('owner@example.com')
  await page.getByLabel('Password').fill('correct horse battery')
  await page.getByRole('button', { name: 'Sign in' }).press('Enter')
  await page.getByRole('heading', { level: 1, name: 'Organizations' }).waitFor()

  await t.test('tracker: a project created, items created, filtered and paged, moved on the board, edited and commented', async (t) => {
    await page.goto(`${s.origin}/console/projects/${s.projectId}`)
    await page.getByRole('link', { name: 'Tracker', exact: true }).click()
    await screen(t, 'tracker-projects', 'Tracker projects')
    t.ok(await page.getByRole('link', { name: 'Website' }).isVisible(), 'the setup\'s project listed')
    await page.getByLabel('Tracker project name').fill('Docs')
    await page.getByLabel(/^Identifier/).fill('WEB')
    await page.getByRole('button', { name: 'Create tracker project' }).click()
    await t.resolves(page.getByRole('alert').filter({ hasText: 'APP_' }).waitFor(), 'a taken identifier: the API\'s refusal')
    await page.getByLabel(/^Identifier/).fill('doc')
    await page.getByRole('button', { name: 'Create tracker project' }).press('Enter')
    await page.getByRole('heading', { level: 1, name: 'Docs: work items' }).waitFor()
    const lpId = decodeURIComponent(new URL(page.url()).pathname.split('/').at(-1) ?? '')
    const lp = `${s.base}/projects/${lpId}`

    for (const [n, title] of ['Fix login', 'Fix logout', 'Write docs'].entries()) {
      await page.getByLabel('Work item title').fill(title)
      await page.getByRole('button', { name: 'Create work item' }).click()
      await page.getByRole('rowheader', { name: `DOC-${n + 1}` }).waitFor()
    }
    await screen(t, 'work-items', 'Docs: work items')
    // Twenty more through the API: the filter's matches then fill more than one page.
    for (let n = 1; n <= 20; n++) await s.must('POST', `${lp}/work-items`, s.owner.auth, { title: `Fix bug ${n}` })

    const filter = page.getByLabel(/^Filter/)
    await filter.fill('{"field": "title", "op": "gt", "value": 1}')
    await page.getByRole('button', { name: 'Apply filter' }).click()
    await t.resolves(page.getByRole('alert').filter({ hasText: 'APP_TRACKER_INVALID_FILTER' }).waitFor(), 'a bad filter: the API\'s message and code')
    await filter.fill('{"field": "title", "op": "contains", "value": "fix"}')
    await page.getByRole('button', { name: 'Apply filter' }).press('Enter')
    await page.getByRole('rowheader', { name: 'DOC-23' }).waitFor()
    t.equal(await page.locator('tbody tr').count(), 20, 'a first page of twenty')
    t.equal(await page.getByRole('rowheader', { name: 'DOC-3', exact: true }).count(), 0, 'the item the filter leaves out is not there')
    await page.getByRole('button', { name: 'Next page' }).click()
    await page.getByRole('rowheader', { name: 'DOC-1', exact: true }).waitFor()
    t.same(await page.locator('tbody th').allInnerTexts(), ['DOC-2', 'DOC-1'], 'the second page by cursor')
    await screen(t, 'work-items-filtered', 'Docs: work items')
    t.ok(await page.getByRole('button', { name: 'Next page' }).isDisabled(), 'the last page')
    await page.getByRole('button', { name: 'Previous page' }).click()
    await page.getByRole('rowheader', { name: 'DOC-23' }).waitFor()

    await page.getByRole('link', { name: 'Board of Docs' }).click()
    await screen(t, 'board', 'Docs: board')
    const move = page.getByLabel('Move DOC-1 to state')
    await move.selectOption({ label: 'In Progress' })
    const column = page.getByRole('region', { name: /^In Progress/ })
    await column.getByRole('link', { name: 'DOC-1: Fix login' }).waitFor()
    const itemId = (await s.must('GET', `${s.base}/browse/DOC-1`, s.owner.auth)).id as string
    t.match(await s.must('GET', `${lp}/work-items/${itemId}`, s.owner.auth), { stateGroup: 'started' }, 'moved at the API')
    await t.resolves(page.getByRole('status').filter({ hasText: 'DOC-1 moved to In Progress.' }).waitFor(), 'the move announced')
    await screen(t, 'board-moved', 'Docs: board')

    // Dragged: a card dropped on another column is the same write.
    const card = page.getByRole('listitem').filter({ has: page.getByRole('link', { name: 'DOC-2: ' }) })
    await card.dragTo(column)
    await column.getByRole('link', { name: /^DOC-2: / }).waitFor()
    await t.resolves(page.getByRole('status').filter({ hasText: 'DOC-2 moved to In Progress.' }).waitFor(), 'the drop announced')
    const dragged = (await s.must('GET', `${s.base}/browse/DOC-2`, s.owner.auth)).id as string
    t.match(await s.must('GET', `${lp}/work-items/${dragged}`, s.owner.auth), { stateGroup: 'started' }, 'dropped at the API')
    await screen(t, 'board-dragged', 'Docs: board')

    const label = await s.must('POST', `${lp}/labels`, s.owner.auth, { name: 'bug', color: '#d73a4a' })
    await column.getByRole('link', { name: 'DOC-1: Fix login' }).click()
    await screen(t, 'work-item', 'DOC-1: Fix login')
    await page.getByLabel('Description (markdown)').fill('The login form forgets the email.')
    await page.getByLabel('Priority').selectOption('high')
    await page.getByRole('checkbox', { name: 'owner@example.com' }).check()
    await page.getByRole('checkbox', { name: 'bug' }).check()
    // Any read of the item the page makes after saving is held until the change behind its back below is made (a slow
    // machine's order): the version the page saves with next must be the one its save answered, not a later one.
    let release = (): void => {}
    const held = new Promise<void>((resolve) => { release = resolve })
    const itemUrl = `**/work-items/${itemId}`
    await page.route(itemUrl, async (route) => { if (route.request().method() === 'GET') await held; await route.continue() })
    await page.getByRole('button', { name: 'Save work item' }).click()
    await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor()
    t.match(await s.must('GET', `${lp}/work-items/${itemId}`, s.owner.auth), {
      description: 'The login form forgets the email.', priority: 'high', assigneeIds: [s.owner.id], labelIds: [label.id]
    }, 'the edits reached the API')
    // Changed behind the page's back: saving the stale version is refused in the API's words.
    await s.must('PATCH', `${lp}/work-items/${itemId}`, s.owner.auth, { title: 'Fix login now' })
    release()
    await page.waitForLoadState('networkidle')
    await page.unroute(itemUrl)
    await page.getByLabel('Priority').selectOption('low')
    await page.getByRole('button', { name: 'Save work item' }).click()
    await t.resolves(page.getByRole('alert').filter({ hasText: 'APP_TRACKER_VERSION_MISMATCH' }).waitFor(), 'a stale save is refused')

    await page.getByLabel('New comment (markdown)').fill('On it')
    await page.getByRole('button', { name: 'Add comment' }).click()
    await page.getByRole('list', { name: 'Comments' }).getByText('On it').waitFor()
    t.match((await s.must('GET', `${lp}/work-items/${itemId}/comments`, s.owner.auth)).items, [{ body: 'On it' }], 'the comment added')
    await page.getByRole('list', { name: 'Activity' }).getByText('commented').waitFor()
    t.ok(await page.getByRole('list', { name: 'Activity' }).getByText('changed priority').isVisible(), 'the activity shows the changes')
    await screen(t, 'work-item-commented', /^DOC-1: /)
  })

  await t.test('assistant: a prompt answered as it streams, a critical tool call approved, the run completed', async (t) => {
    const states = await s.must('GET', `${s.lp}/states`, s.owner.auth)
    const done = states.items.find((state: { group: string }) => state.group === 'completed')
    const itemId = (await s.must('POST', `${s.lp}/work-items`, s.owner.auth, { title: 'Old bug', stateId: done.id })).id as string
    s.provider.push(
      { text: 'Archiving the old bug. ', toolCalls: [{ id: 'call_1', name: 'work_item_archive', input: { lpId: s.lpId, itemId } }] },
      { text: 'Done: the old bug is archived.' }
    )
    await page.goto(`${s.origin}/console/projects/${s.projectId}`)
    await page.getByRole('link', { name: 'Assistant' }).click()
    await screen(t, 'assistant', 'Assistant')
    await page.getByLabel('New conversation title (optional)').fill('Tidy up')
    await page.getByRole('button', { name: 'Start conversation' }).click()
    await page.getByLabel('Message').fill('Archive the old bug')
    await page.getByRole('button', { name: 'Send' }).click()
    await page.getByRole('button', { name: 'Approve work_item_archive' }).waitFor()
    t.match(await page.getByTestId('streamed').innerText(), /Archiving the old bug\./, 'the streamed text shown')
    t.equal((await s.must('GET', `${s.lp}/work-items/${itemId}`, s.owner.auth)).archivedAt, null, 'nothing ran before the approval')
    await screen(t, 'assistant-approval', 'Assistant')

    await page.getByRole('button', { name: 'Approve work_item_archive' }).click()
    await page.getByRole('heading', { name: 'Answer (completed)' }).waitFor()
    t.match(await page.getByTestId('streamed').innerText(), /Done: the old bug is archived\./, 'the rest of the answer streamed in')
    await page.getByRole('list', { name: 'Transcript' }).getByText('Done: the old bug is archived.').waitFor()
    await t.resolves(waitUntil(async () => (await s.must('GET', `${s.lp}/work-items/${itemId}`, s.owner.auth)).archivedAt !== null), 'the approved call ran')
    t.equal(await page.getByRole('button', { name: 'Approve work_item_archive' }).count(), 0, 'no approval left')
    await screen(t, 'assistant-answered', 'Assistant')
  })

  t.same([...hosts], ['127.0.0.1'], 'no request left loopback')
  t.same(readdirSync(screens).length, recorder.count, 'a screenshot of each screen')
})
