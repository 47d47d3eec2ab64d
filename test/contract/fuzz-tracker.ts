import { createHash } from 'node:crypto'
import type { TestApp } from '../helper.js'

/** What the tracker's fixtures need of the fuzz world: its calls and its named values. */
export interface FixtureCalls {
  app: TestApp
  must: (method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', url: string, token: string | null, payload?: unknown) => Promise<any>
  status: (url: string, token: string) => Promise<{ status: number, data: any }>
  get: (name: string) => string
  has: (name: string) => boolean
  set: (entries: Record<string, string>) => void
  forget: (names: string[]) => void
  rebuilding: (what: string) => void
  serial: () => number
}

/** The names of the tracker's fixtures: asking for any of them first builds them all. */
export const TRACKER_FIXTURES = [
  'lpId', 'trackerItemId', 'otherTrackerItemId', 'intakeItemId', 'itemKey', 'trackerStateId', 'trackerLabelId', 'typeId', 'estimateId',
  'trackerCommentId', 'trackerLinkId', 'trackerRelationId', 'attachmentId', 'attachmentSessionId', 'cycleId', 'otherCycleId', 'moduleId',
  'viewId', 'pageId', 'versionId'
]

const ATTACHMENT = Buffer.from('fuzz attachment\n')

/**
 * A tracker project with everything in it a path can name: states, a label,
 * an issue type, an estimate system, two items (one with a comment, a link,
 * a relation and an attachment), an intake item, an open upload session, two
 * cycles, a module, a view and a page. Fuzzed requests archive, hide,
 * switch off, lock and delete these; `ensure` puts back what is gone.
 */
export async function ensureTracker (world: FixtureCalls): Promise<void> {
  const jwt = world.get('platformJwt')
  const base = `/api/projects/${world.get('projectId')}/tracker/projects`
  const lpId = world.has('lpId') ? world.get('lpId') : undefined
  if (lpId === undefined || (await world.status(`${base}/${lpId}`, jwt)).status !== 200) {
    if (lpId !== undefined) world.rebuilding('tracker project')
    world.forget(TRACKER_FIXTURES)
    const project = await world.must('POST', base, jwt, { name: 'Fuzz', identifier: `FZ${world.serial()}` })
    world.set({ lpId: project.id })
  }
  const lp = `${base}/${world.get('lpId')}`
  const project = (await world.status(lp, jwt)).data
  if (project.archivedAt !== null) await world.must('POST', `${lp}/restore`, jwt)
  const features = { cycles: true, modules: true, views: true, pages: true, intake: true }
  if (project.visibility !== 'public' || Object.values(project.features).includes(false)) await world.must('PATCH', lp, jwt, { visibility: 'public', features })
  const members = await world.must('GET', `${lp}/members?limit=200`, jwt)
  if (!members.items.some((member: { userId: string }) => member.userId === world.get('memberId'))) {
    await world.must('POST', `${lp}/members`, jwt, { userId: world.get('memberId'), role: 'member' })
  }

  /** One fixture: kept while its URL answers 200, made again otherwise. */
  const ensure = async (name: string, url: (id: string) => string, make: () => Promise<string>): Promise<void> => {
    if (world.has(name) && (await world.status(url(world.get(name)), jwt)).status === 200) return
    if (world.has(name)) world.rebuilding(`tracker ${name}`)
    world.set({ [name]: await make() })
  }
  const n = world.serial
  await ensure('trackerStateId', (id) => `${lp}/states/${id}`, async () => (await world.must('POST', `${lp}/states`, jwt, { name: `S${n()}`, color: '#123456', group: 'started' })).id)
  await ensure('trackerLabelId', (id) => `${lp}/labels/${id}`, async () => (await world.must('POST', `${lp}/labels`, jwt, { name: `L${n()}`, color: '#123456' })).id)
  await ensure('typeId', (id) => `${lp}/issue-types/${id}`, async () => (await world.must('POST', `${lp}/issue-types`, jwt, { name: `T${n()}` })).id)
  await ensure('estimateId', (id) => `${lp}/estimates/${id}`, async () => (await world.must('POST', `${lp}/estimates`, jwt, { name: `E${n()}`, type: 'points', points: ['1', '2'] })).id)
  const item = async (): Promise<string> => (await world.must('POST', `${lp}/work-items`, jwt, { title: `Fuzz ${n()}` })).id
  await ensure('trackerItemId', (id) => `${lp}/work-items/${id}`, item)
  await ensure('otherTrackerItemId', (id) => `${lp}/work-items/${id}`, item)
  world.set({ itemKey: (await world.must('GET', `${lp}/work-items/${world.get('trackerItemId')}`, jwt)).key })
  await ensure('intakeItemId', (id) => `${lp}/intake/${id}`, async () => (await world.must('POST', `${lp}/intake`, jwt, { title: `Proposed ${n()}` })).id)
  const at = `${lp}/work-items/${world.get('trackerItemId')}`
  const listed = async (url: string, name: string, make: () => Promise<string>): Promise<void> => {
    const items = (await world.must('GET', url, jwt)).items as Array<{ id: string }>
    if (world.has(name) && items.some((entry) => entry.id === world.get(name))) return
    if (world.has(name)) world.rebuilding(`tracker ${name}`)
    world.set({ [name]: items[0]?.id ?? await make() })
  }
  await listed(`${at}/comments`, 'trackerCommentId', async () => (await world.must('POST', `${at}/comments`, jwt, { body: 'fuzz' })).id)
  await listed(`${at}/links`, 'trackerLinkId', async () => (await world.must('POST', `${at}/links`, jwt, { url: `https://example.com/${n()}` })).id)
  await listed(`${at}/relations`, 'trackerRelationId', async () => {
    return (await world.must('POST', `${at}/relations`, jwt, { type: 'relates_to', itemId: world.get('otherTrackerItemId') })).id
  })
  await listed(`${at}/attachments`, 'attachmentId', async () => await attach(world, `${at}/attachments`, jwt))
  await ensure('attachmentSessionId', (id) => `${at}/attachments/upload-sessions/${id}`, async () => {
    return (await world.must('POST', `${at}/attachments/upload-sessions`, jwt, { name: 'part.bin', size: ATTACHMENT.length, type: 'application/octet-stream' })).id
  })
  const session = (await world.status(`${at}/attachments/upload-sessions/${world.get('attachmentSessionId')}`, jwt)).data
  if (session.status !== 'open') {
    world.rebuilding('tracker upload session')
    world.set({ attachmentSessionId: (await world.must('POST', `${at}/attachments/upload-sessions`, jwt, { name: 'part.bin', size: ATTACHMENT.length, type: 'application/octet-stream' })).id })
  }
  await ensure('cycleId', (id) => `${lp}/cycles/${id}`, async () => (await world.must('POST', `${lp}/cycles`, jwt, { name: `C${n()}` })).id)
  await ensure('otherCycleId', (id) => `${lp}/cycles/${id}`, async () => (await world.must('POST', `${lp}/cycles`, jwt, { name: `C${n()}` })).id)
  await ensure('moduleId', (id) => `${lp}/modules/${id}`, async () => (await world.must('POST', `${lp}/modules`, jwt, { name: `M${n()}` })).id)
  await ensure('viewId', (id) => `${lp}/views/${id}`, async () => (await world.must('POST', `${lp}/views`, jwt, { name: `V${n()}`, access: 'public' })).id)
  await ensure('pageId', (id) => `${lp}/pages/${id}`, async () => (await world.must('POST', `${lp}/pages`, jwt, { title: `P${n()}`, content: 'fuzz' })).id)
  world.set({ versionId: (await world.must('GET', `${lp}/pages/${world.get('pageId')}/versions`, jwt)).items[0].id })
}

/** An attachment made the way a client makes one: a session, its one chunk, complete. */
async function attach (world: FixtureCalls, at: string, jwt: string): Promise<string> {
  const sha256 = createHash('sha256').update(ATTACHMENT).digest('hex')
  const session = await world.must('POST', `${at}/upload-sessions`, jwt, { name: 'fuzz.txt', size: ATTACHMENT.length, type: 'text/plain', sha256 })
  const put = await world.app.inject({ method: 'PUT', url: `${at}/upload-sessions/${session.id as string}/chunks/0`, headers: { authorization: `Bearer ${jwt}`, 'content-type': 'application/octet-stream' }, payload: ATTACHMENT })
  if (put.statusCode !== 200) throw new Error(`fixture chunk: ${put.statusCode} ${put.body}`)
  return (await world.must('POST', `${at}/upload-sessions/${session.id as string}/complete`, jwt)).id
}
