import t from 'tap'
import { projectCollectionName } from '../../../services/projects/naming.js'
import { IMPORT_LEASE_MS, IMPORT_SWEEP_EVERY_MS, IMPORT_SWEEP_JOB, Projects } from '../../../services/projects/projects.js'
import { ManualClock } from '../../../services/platform/clock.js'
import { importProject } from '../../../services/backup/project-import.js'
import { buildTestApp, call, signUp, refusal } from '../../helper.js'

/**
 * An import whose process died leaves its project hidden (`importing`) with
 * whatever it had written: no request can see or delete it. Its lease stops
 * being renewed, and the sweep removes it with its data; an import still at
 * work, and a project that was revealed, are left alone.
 */
t.test('the sweep removes hidden projects whose import lease ran out, with their records and files, and nothing else', async (t) => {
  const app = await buildTestApp(t)
  const owner = await signUp(app, 'owner@example.com')
  const orgId = (await call(app, 'POST', '/api/organizations', owner.auth, { name: 'Acme' })).body.data.id as string
  const projects = app.store.collection<{ _id: string, importLeaseUntil?: Date, createdAt: Date }>('projects')
  const hidden = async (name: string): Promise<string> => {
    const { id } = await app.projects.create(orgId, owner.id, { name }, { importing: true })
    await app.collections.definitions.create(id, { name: 'items', fields: [{ name: 'n', type: 'number' }] })
    await app.store.collection(projectCollectionName(id, 'items')).insertMany([{ n: 1 }, { n: 2 }])
    await app.files.store.write(`files/${id}/items/r1/f/f1`, Buffer.from('partial'))
    return id
  }
  const past = new Date(Date.now() - 1_000)
  const dead = await hidden('Dead')
  await projects.updateOne({ _id: dead }, { $set: { importLeaseUntil: past } })
  const legacy = await hidden('Legacy')
  await projects.updateOne({ _id: legacy }, { $unset: { importLeaseUntil: '' }, $set: { createdAt: new Date(Date.now() - IMPORT_LEASE_MS - 1_000) } })
  const working = await hidden('Working')
  const renewed = await hidden('Renewed')
  await projects.updateOne({ _id: renewed }, { $set: { importLeaseUntil: past } })
  t.equal(await app.projects.renewImport(renewed), true, 'an import still at work renews its lease')
  const revealed = await hidden('Revealed')
  await app.projects.finishImport(revealed)
  t.notOk('importLeaseUntil' in (await projects.findOne({ _id: revealed }) ?? {}), 'a revealed project holds no lease')

  t.equal(await app.projects.sweepAbandonedImports(), 2, 'the one whose lease ran out, and the one from before leases, older than one')
  for (const id of [dead, legacy]) {
    t.equal(await projects.findOne({ _id: id }), null, 'its project record is gone')
    t.equal(await app.store.collection(projectCollectionName(id, 'items')).countDocuments(), 0, 'its records are gone')
    t.equal(await app.files.store.stat(`files/${id}/items/r1/f/f1`), null, 'its files are gone')
  }
  t.equal(await app.projects.renewImport(dead), false, 'the dead import, were it to wake, learns its project was taken')
  t.equal(await app.projects.finishImport(dead), false, 'and cannot reveal it')
  for (const id of [working, renewed, revealed]) {
    t.equal(await app.store.collection(projectCollectionName(id, 'items')).countDocuments(), 2, 'a live import and a revealed project keep their records')
    t.ok(await app.files.store.stat(`files/${id}/items/r1/f/f1`), 'and their files')
  }
  t.equal((await app.projects.get(revealed)).name, 'Revealed')
  t.equal(await app.projects.sweepAbandonedImports(), 0, 'nothing left to sweep')

  const job = await app.jobs.get(`-every:${IMPORT_SWEEP_JOB}`)
  t.match(job, { type: IMPORT_SWEEP_JOB, everyMs: IMPORT_SWEEP_EVERY_MS }, 'one recurring sweep for the deployment')
})

t.test('an import whose lease the sweep took stops at its next write, with an error saying so, and leaves nothing behind', async (t) => {
  const app = await buildTestApp(t)
  const owner = await signUp(app, 'owner@example.com')
  const orgId = (await call(app, 'POST', '/api/organizations', owner.auth, { name: 'Acme' })).body.data.id as string
  const source = await app.projects.create(orgId, owner.id, { name: 'Source' })
  await app.collections.definitions.create(source.id, { name: 'items', fields: [{ name: 'n', type: 'number' }] })
  await app.store.collection(projectCollectionName(source.id, 'items')).insertMany([{ _id: 'r1', n: 1 }, { _id: 'r2', n: 2 }])
  for (const fileId of ['f1', 'f2']) await app.files.store.write(`files/${source.id}/items/r1/f/${fileId}`, Buffer.from(fileId))
  const exported = await app.projectArchives.export(source)
  t.teardown(exported.dispose)

  // The import stalls in its first file write, long enough for its lease to run out and the sweep to take its project.
  let stalled = (_key: string): void => {}
  const reached = new Promise<string>((resolve) => { stalled = resolve })
  let resume = (): void => {}
  const gate = new Promise<void>((resolve) => { resume = resolve })
  const fileStore = Object.assign(Object.create(app.files.store) as typeof app.files.store, {
    write: async (key: string, body: Parameters<typeof app.files.store.write>[1]) => {
      stalling = true
      stalled(key)
      await gate
      return await app.files.store.write(key, body)
    }
  })
  // Its renewals stall with it (the process paused), and go through once it wakes.
  let wake = (): void => {}
  const awake = new Promise<void>((resolve) => { wake = resolve })
  let lost = (): void => {}
  const told = new Promise<void>((resolve) => { lost = resolve })
  let stalling = false
  const projects = Object.assign(Object.create(app.projects) as typeof app.projects, {
    renewImport: async (id: string) => {
      if (stalling) await awake
      const held = await app.projects.renewImport(id)
      if (!held) lost()
      return held
    }
  })
  const archivePorts = { store: app.store, fileStore, definitions: app.collections.definitions, repositories: app.git.repositories, reader: app.git.reader, git: app.git.git }
  const ports = { ...archivePorts, clock: app.storeClock, serverVersion: 'test', hosting: { ...app.hosting, uploads: app.files.uploads }, projects, limits: { maxEntryBytes: 1e6, maxUnpackedBytes: 1e7 }, renewEveryMs: 5 }
  const importing = importProject(ports, orgId, owner.id, exported.file)
  const importedId = (await reached).split('/')[1]
  t.equal(await app.store.collection(projectCollectionName(importedId, 'items')).countDocuments(), 2, 'the records were written before the stall')
  await app.store.collection('projects').updateOne({ _id: importedId }, { $set: { importLeaseUntil: new Date(Date.now() - 1_000) } })
  t.equal(await app.projects.sweepAbandonedImports(), 1, 'the sweep takes the stalled import for dead')
  wake()
  await told
  await new Promise((resolve) => setTimeout(resolve, 20))
  resume()
  const error = await refusal(importing)
  t.equal(error.code, 'APP_PROJECT_IMPORT_ABANDONED', 'the import stops with its own refusal, not at the finish with a 404')
  t.equal(error.status, 503)
  t.equal(await app.store.collection('projects').findOne({ _id: importedId }), null, 'no project record')
  t.equal(await app.store.collection(projectCollectionName(importedId, 'items')).countDocuments(), 0, 'no records')
  const left: string[] = []
  for await (const { key } of app.files.store.list(`files/${importedId}`)) left.push(key)
  t.same(left, [], 'not even the file it was writing when the sweep ran')
})

t.test('the import lease is read in the Store\'s time, whatever this process\'s clock says', async (t) => {
  const app = await buildTestApp(t)
  const owner = await signUp(app, 'owner@example.com')
  const orgId = (await call(app, 'POST', '/api/organizations', owner.auth, { name: 'Acme' })).body.data.id as string
  const storeMs = Date.UTC(2030, 0, 1)
  // This process's clock runs a day ahead of the Store's: a lease taken in it would look alive a day too long to the others.
  const projects = new Projects(app.store, { clock: new ManualClock(storeMs + 86_400_000), storeClock: new ManualClock(storeMs), schedulePurge: async () => {} })
  const { id } = await projects.create(orgId, owner.id, { name: 'Importing' }, { importing: true })
  const record = app.store.collection<{ _id: string, importLeaseUntil?: Date }>('projects')
  t.same((await record.findOne({ _id: id }))?.importLeaseUntil, new Date(storeMs + IMPORT_LEASE_MS), 'taken in the Store\'s time')
  await record.updateOne({ _id: id }, { $set: { importLeaseUntil: new Date(0) } })
  t.equal(await projects.renewImport(id), true)
  t.same((await record.findOne({ _id: id }))?.importLeaseUntil, new Date(storeMs + IMPORT_LEASE_MS), 'and renewed in it')
})
