import t from 'tap'
import { chmodSync, readdirSync, statSync, writeFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { openSqliteStore } from '../services/store/sqlite/index.js'
import { buildTestApp, call, signUp, tempDir } from './helper.js'

const modeOf = (path: string): string => (statSync(path).mode & 0o777).toString(8)

/** Every regular file under `dir` that someone other than its owner may read or write, with its mode. */
function openToOthers (dir: string, skip: ReadonlySet<string>): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => relative(dir, join(entry.parentPath, entry.name)))
    .filter((path) => !skip.has(path.split('/')[0]) && (statSync(join(dir, path)).mode & 0o077) !== 0)
    .map((path) => `${path} ${modeOf(join(dir, path))}`)
}

t.test('the store, its WAL and shared memory, the keys and records\' files are readable by the server\'s user only', { skip: process.env.MONGODB_URL !== undefined && process.env.MONGODB_URL !== '' ? 'the embedded engine\'s files' : false }, async (t) => {
  const app = await buildTestApp(t, { env: { GIT_SSH_PORT: '0' } })
  const dataDir = app.config.dataDir
  const admin = await signUp(app, 'admin@example.com')
  const orgId = (await call(app, 'POST', '/api/organizations', admin.auth, { name: 'Acme' })).body.data.id as string
  const projectId = (await call(app, 'POST', '/api/projects', admin.auth, { orgId, name: 'Files' })).body.data.id as string
  await call(app, 'POST', `/api/projects/${projectId}/collections`, admin.auth, {
    name: 'docs',
    fields: [{ name: 'f', type: 'file' }],
    methods: Object.fromEntries(['create', 'upload'].map((method) => [method, { enabled: true, rule: null }]))
  })
  const created = await call(app, 'POST', `/api/p/${projectId}/docs`, admin.auth, {})
  t.equal(created.status, 201, JSON.stringify(created.body))
  const id = created.body.data.id as string
  const base = `/api/p/${projectId}/docs/${id}/files/f`
  const session = (await call(app, 'POST', `${base}/upload-sessions`, admin.auth, { name: 'a.txt', size: 5, type: 'text/plain' })).body.data.id as string
  await app.inject({ method: 'PUT', url: `${base}/upload-sessions/${session}/chunks/0`, headers: { ...admin.auth, 'content-type': 'application/octet-stream' }, payload: Buffer.from('hello') })
  t.equal((await call(app, 'POST', `${base}/upload-sessions/${session}/complete`, admin.auth)).status, 200)

  for (const name of ['plinth.db', 'plinth.db-wal', 'plinth.db-shm', 'master.key', 'ssh_host_ed25519_key']) t.equal(modeOf(join(dataDir, name)), '600', name)
  // Repositories (git's own modes) and hosted apps' trees are shared with the processes that serve them.
  t.same(openToOthers(dataDir, new Set(['git', 'hosting'])), [], 'nothing else under DATA_DIR either, uploads included')
})

t.test('a database an earlier version left readable to others is narrowed when it is opened', async (t) => {
  const dir = tempDir(t)
  const file = join(dir, 'plinth.db')
  const first = openSqliteStore({ file })
  await first.collection('things').insertOne({ _id: 'a', secret: 'x' })
  await first.close()
  writeFileSync(`${file}-wal`, '')
  for (const path of [file, `${file}-wal`]) chmodSync(path, 0o644)
  const again = openSqliteStore({ file })
  t.teardown(async () => { await again.close() })
  t.same(await again.collection('things').findOne({ _id: 'a' }), { _id: 'a', secret: 'x' })
  for (const path of [file, `${file}-wal`, `${file}-shm`]) t.equal(modeOf(path), '600', relative(dir, path))
})
