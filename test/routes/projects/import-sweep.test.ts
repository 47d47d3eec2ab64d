import t from 'tap'
import { projectCollectionName } from '../../../services/projects/naming.js'
import { IMPORT_LEASE_MS, IMPORT_SWEEP_EVERY_MS, IMPORT_SWEEP_JOB } from '../../../services/projects/projects.js'
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
  t.equal((await refusal(app.projects.finishImport(dead))).code, 'APP_PROJECT_NOT_FOUND', 'and cannot reveal it')
  for (const id of [working, renewed, revealed]) {
    t.equal(await app.store.collection(projectCollectionName(id, 'items')).countDocuments(), 2, 'a live import and a revealed project keep their records')
    t.ok(await app.files.store.stat(`files/${id}/items/r1/f/f1`), 'and their files')
  }
  t.equal((await app.projects.get(revealed)).name, 'Revealed')
  t.equal(await app.projects.sweepAbandonedImports(), 0, 'nothing left to sweep')

  const job = await app.jobs.get(`-every:${IMPORT_SWEEP_JOB}`)
  t.match(job, { type: IMPORT_SWEEP_JOB, everyMs: IMPORT_SWEEP_EVERY_MS }, 'one recurring sweep for the deployment')
})
