import t from 'tap'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { setTimeout as delay } from 'node:timers/promises'
import { buildApp } from '../../../app.js'
import { fileKey } from '../../../services/files/upload-session.js'
import { projectCollectionName, projectCollectionPrefix } from '../../../services/projects/naming.js'
import { openSqliteStore } from '../../../services/store/sqlite/index.js'
import { join } from 'node:path'
import { call, signUp, testConfig, TEST_MONGODB_URL } from '../../helper.js'

const ROOT = new URL('../../..', import.meta.url).pathname
const RECORDS = 200_000
const FILES = 1000
// Forced small: a thousand pages for the records alone.
const PAGE = '200'

/**
 * Issue 29: a project of 200,000 records and 1,000 files is deleted through
 * paged sweeps, each page its own bounded write; a server killed half-way
 * leaves a project that is already gone for its users and a purge job that
 * finishes the work. The embedded engine, whose file the test can read
 * while another process writes it.
 */
t.test('a project of 200,000 records and 1,000 files is purged in pages, and a purge killed half-way is finished by its job', { skip: TEST_MONGODB_URL !== undefined && 'the embedded engine only', timeout: 240_000 }, async (t) => {
  const config = testConfig(t, { STORE_SWEEP_PAGE_SIZE: PAGE })
  let app = await buildApp(config)
  await app.ready()
  const owner = await signUp(app, 'owner@example.com')
  const orgId = (await call(app, 'POST', '/api/organizations', owner.auth, { name: 'Acme' })).body.data.id as string
  const projectId = (await call(app, 'POST', '/api/projects', owner.auth, { orgId, name: 'Big' })).body.data.id as string
  for (const [name, fields] of [['items', [{ name: 'n', type: 'number' }]], ['docs', [{ name: 'f', type: 'file' }]]] as const) {
    t.equal((await call(app, 'POST', `/api/projects/${projectId}/collections`, owner.auth, { name, fields })).status, 201, `collection ${name}`)
  }
  const items = app.store.collection(projectCollectionName(projectId, 'items'))
  for (let from = 0; from < RECORDS; from += 10_000) {
    await items.insertMany(Array.from({ length: 10_000 }, (_, i) => ({ n: from + i })))
  }
  const docs = app.store.collection(projectCollectionName(projectId, 'docs'))
  const keys: string[] = []
  for (let i = 0; i < FILES; i++) {
    const recordId = `r${i}`
    const key = fileKey({ projectId, table: 'docs', recordId, field: 'f' }, `f${i}`)
    if (key === null) throw new Error('no key')
    await app.files.store.write(key, Buffer.from(`file ${i}`))
    keys.push(key)
  }
  await docs.insertMany(keys.map((_, i) => ({ _id: `r${i}`, f: { id: `f${i}` } })))
  t.equal(await items.countDocuments(), RECORDS)
  const listed = async (): Promise<number> => {
    const found: string[] = []
    for await (const object of app.files.store.list(`files/${projectId}`)) found.push(object.key)
    return found.length
  }
  t.equal(await listed(), FILES)
  await app.close()

  // Another process deletes the project; killed once part of the records has gone.
  const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'test/fixtures/purge-project.ts'), projectId], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, LOG_LEVEL: 'silent', GATEWAY_PORT: 'off', DATA_DIR: config.dataDir, STORE_SWEEP_PAGE_SIZE: PAGE },
    stdio: ['ignore', 'pipe', 'inherit']
  })
  let output = ''
  child.stdout.on('data', (chunk: Buffer) => { output += chunk.toString() })
  const exited = once(child, 'exit')
  const watcher = openSqliteStore({ file: join(config.dataDir, 'plinth.db') })
  const watched = watcher.collection(projectCollectionName(projectId, 'items'))
  let left = RECORDS
  while (left > RECORDS / 2 && child.exitCode === null) {
    await delay(50)
    left = await watched.countDocuments()
  }
  child.kill('SIGKILL')
  const [, signal] = await exited
  await watcher.close()
  t.equal(signal, 'SIGKILL', 'the deleting process was killed')
  t.notMatch(output, /deleted/, 'before it had finished')
  t.ok(left > 0 && left <= RECORDS / 2, `killed half-way: ${left} of ${RECORDS} records were left`)

  // A new start: the project is gone for its users at once, and its purge job is queued.
  app = await buildApp(config)
  await app.ready()
  t.teardown(async () => { await app.close() })
  t.equal((await call(app, 'GET', `/api/projects/${projectId}`, owner.auth)).status, 404, 'the project no longer answers')
  const remaining = app.store.collection(projectCollectionName(projectId, 'items'))
  const before = await remaining.countDocuments()
  t.ok(before > 0 && before < RECORDS, 'part of the records is still there')
  const job = await app.store.collection('_jobs').findOne({ type: 'project.purge', 'payload.projectId': projectId, status: 'queued' })
  t.ok(job !== null, 'the purge job waits to finish it')
  // What the job's handler does once it is due.
  await app.projects.purge(projectId)
  t.same((await app.store.listCollections()).filter((name) => name.startsWith(projectCollectionPrefix(projectId))), [], 'every collection of the project is gone')
  t.equal(await listed(), 0, 'and every file')
  t.equal(await app.store.collection('collection_definitions').countDocuments({ projectId }), 0, 'and its collection definitions')
  t.equal(await app.store.collection('projects').countDocuments({ _id: projectId }), 0, 'and the project record')
})
