import { createIdGenerator } from '../../../services/platform/ids.js'
import t, { type Test } from 'tap'
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { PassThrough } from 'node:stream'
import { ManualClock } from '../../../services/platform/clock.js'
import { CollectionDefinitions } from '../../../services/collections/definitions.js'
import { Records } from '../../../services/collections/records.js'
import { Cursors } from '../../../services/collections/query.js'
import { RecordFiles } from '../../../services/collections/record-files.js'
import { LocalFileStore } from '../../../services/files/local-file-store.js'
import { UploadSessions } from '../../../services/files/uploads.js'
import { newId } from '../../../services/platform/ids.js'
import { WriteGate } from '../../../services/collections/write-gate.js'
import { projectCollectionName } from '../../../services/projects/naming.js'
import { openStore, type Document, type Store, type StoreCollection } from '../../../services/store/index.js'
import { tempDir, tempStore } from '../../helper.js'
import type { FieldDefinitionT } from '../../../schemas/collections.js'

const P = 'proj-a'
const POSTS = projectCollectionName(P, 'posts')
const anonymous = { kind: 'anonymous' as const }
const title: FieldDefinitionT = { name: 'title', type: 'text' }
const summary: FieldDefinitionT = { name: 'summary', type: 'text', required: true }

/** A gate held shut until released, and a Store whose posts collection waits at it before the chosen operation. */
function holdable (store: Store, operation: 'insertOne' | 'countDocuments') {
  let release = (): void => {}
  let reached = (): void => {}
  const arrived = new Promise<void>((resolve) => { reached = resolve })
  const opened = new Promise<void>((resolve) => { release = resolve })
  const holding: Store = Object.create(store)
  holding.collection = <T extends Document>(name: string): StoreCollection<T> => {
    const inner = store.collection<T>(name)
    if (name !== POSTS) return inner
    const wrapped: StoreCollection<T> = Object.create(inner)
    const original = inner[operation].bind(inner) as (...args: unknown[]) => Promise<unknown>
    ;(wrapped as unknown as Record<string, unknown>)[operation] = async (...args: unknown[]) => { reached(); await opened; return await original(...args) }
    return wrapped
  }
  return { store: holding, arrived, release }
}

async function setup (t: Test, operation: 'insertOne' | 'countDocuments') {
  const raw = await tempStore(t, 'plinth-write-race-')
  const held = holdable(raw, operation)
  const clock = new ManualClock(Date.UTC(2026, 0, 1))
  const writes = new WriteGate()
  const defs = new CollectionDefinitions(held.store, { clock, writes })
  await defs.init({ warn: () => {} })
  const records = new Records(held.store, { clock, newId: createIdGenerator(() => clock.nowMs()), cursors: new Cursors(randomBytes(32)), findCollection: async (projectId, name) => await defs.find(projectId, name), writes })
  await defs.create(P, { name: 'posts', fields: [title], methods: { create: { enabled: true, rule: { requireAuth: false } } } })
  return { raw, defs, records, ...held }
}

const settled = async (promise: Promise<unknown>): Promise<boolean> => {
  let done = false
  promise.then(() => { done = true }, () => { done = true })
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve))
  return done
}

t.test('a definition change waits for a record write under way, and its scan sees that record', async (t) => {
  const { raw, defs, records, arrived, release } = await setup(t, 'insertOne')
  const creating = records.create(P, 'posts', anonymous, { title: 'no summary' })
  await arrived
  const changing = defs.update(P, 'posts', { fields: [title, summary] })
  t.notOk(await settled(changing), 'the change waits while the write is under way')
  release()
  await creating
  await t.rejects(changing, { code: 'APP_DEFINITION_CONFLICT', status: 409 }, 'and then refuses: the new record lacks the field')
  t.same((await defs.get(P, 'posts')).fields, [title], 'the definition did not change')
  t.equal(await raw.collection(POSTS).countDocuments({}), 1)
})

t.test('a record write that starts during a change waits for it and is checked against the new definition', async (t) => {
  const { raw, defs, records, arrived, release } = await setup(t, 'countDocuments')
  const changing = defs.update(P, 'posts', { fields: [title, summary] })
  await arrived
  const creating = records.create(P, 'posts', anonymous, { title: 'no summary' })
  t.notOk(await settled(creating), 'the write waits while the change scans')
  release()
  await changing
  await t.rejects(creating, { code: 'APP_FIELD_REQUIRED', status: 400 }, 'and is refused under the new definition')
  t.equal(await raw.collection(POSTS).countDocuments({}), 0, 'nothing that breaks the definition got in')
  t.match(await records.create(P, 'posts', anonymous, { title: 'with', summary: 'a summary' }), { title: 'with', summary: 'a summary' })
})

t.test('an upload holds the gate only to attach: a definition change does not wait for its bytes', async (t) => {
  const dir = tempDir(t, 'plinth-write-race-files-')
  const store = await openStore({ dataDir: dir, mongodbUrl: null, mongodbDb: 'plinth' })
  t.teardown(async () => { await store.close() })
  const clock = new ManualClock(Date.UTC(2026, 0, 1))
  const writes = new WriteGate()
  const defs = new CollectionDefinitions(store, { clock, writes })
  await defs.init({ warn: () => {} })
  const records = new Records(store, { clock, newId: createIdGenerator(() => clock.nowMs()), cursors: new Cursors(randomBytes(32)), findCollection: async (projectId, name) => await defs.find(projectId, name), writes })
  const uploads = new UploadSessions(store, new LocalFileStore(join(dir, 'files')), { clock, newId })
  await uploads.init()
  const files = new RecordFiles(store, uploads, { clock, findCollection: async (projectId, name) => await defs.find(projectId, name), maxSize: 1024 * 1024, writes })
  const open = { enabled: true, rule: { requireAuth: false } }
  await defs.create(P, { name: 'docs', fields: [title, { name: 'attachment', type: 'file' }], methods: { create: open, upload: open } })
  const record = await records.create(P, 'docs', anonymous, { title: 'a' })

  const body = new PassThrough()
  const uploading = files.uploadWhole({ projectId: P, table: 'docs', id: record.id, field: 'attachment' }, anonymous, { name: 'a.txt', type: 'text/plain', body })
  body.write('first half, ')
  await new Promise((resolve) => setTimeout(resolve, 20))
  await defs.update(P, 'docs', { fields: [title, { name: 'attachment', type: 'file' }, { name: 'note', type: 'text' }] })
  t.notOk(await settled(uploading), 'the change was saved while the upload was still streaming')
  body.end('second half')
  const { file, record: attached } = await uploading
  t.equal(file.size, 'first half, second half'.length)
  t.match(attached, { attachment: { id: file.id } }, 'and the file is attached once its bytes are in')
})
