import t, { type Test } from 'tap'
import { existsSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { verifyBackup } from '../../../services/backup/restore.js'
import { buildTestApp, call, signUp, tempDir, type TestApp } from '../../helper.js'

interface World { app: TestApp, admin: Awaited<ReturnType<typeof signUp>>, other: Awaited<ReturnType<typeof signUp>>, env: Record<string, string> }

/**
 * PLATFORM_ADMINS names ids, which exist only once the users do: the users
 * are made on a first app, and the app under test runs on the same DATA_DIR
 * (and store, and master key) with the admin listed, as a restart would.
 */
async function world (t: Test, env: Record<string, string> = {}): Promise<World> {
  const first = await buildTestApp(t)
  const admin = await signUp(first, 'admin@example.com')
  const other = await signUp(first, 'other@example.com')
  const shared = {
    DATA_DIR: first.config.dataDir,
    ...(first.config.mongodbUrl === null ? {} : { MONGODB_URL: first.config.mongodbUrl, MONGODB_DB: first.config.mongodbDb, PLINTH_MASTER_KEY: first.config.masterKey ?? '' }),
    ...env
  }
  const app = await buildTestApp(t, { env: { ...shared, PLATFORM_ADMINS: `${admin.id}` } })
  return { app, admin, other, env: shared }
}

async function settled (app: TestApp, auth: Record<string, string>, id: string): Promise<Record<string, unknown>> {
  for (let i = 0; i < 600; i++) {
    const res = await call(app, 'GET', `/api/admin/backups/${id}`, auth)
    if (res.body.data.status === 'ready' || res.body.data.status === 'failed') return res.body.data
    await sleep(50)
  }
  throw new Error('the backup did not finish')
}

t.test('an administrator backs up, lists, downloads (the archive passes the restore\'s checks) and deletes', async (t) => {
  const { app, admin } = await world(t)
  const posted = await call(app, 'POST', '/api/admin/backups', admin.auth)
  t.equal(posted.status, 202)
  t.match(posted.body.data, { status: 'queued', origin: 'api', requestedBy: admin.id, size: null, checksum: null })
  const id = posted.body.data.id as string
  t.equal(posted.headers.location, `/api/admin/backups/${id}`)

  const ready = await settled(app, admin.auth, id)
  t.match(ready, { status: 'ready', error: null, checksum: 'verified', sha256: /^[0-9a-f]{64}$/, upload: null })
  t.ok((ready.size as number) > 0 && (ready.files as number) > 0)

  const listed = await call(app, 'GET', '/api/admin/backups', admin.auth)
  t.same(listed.body.data.items.map((item: { id: string }) => item.id), [id])
  t.equal(listed.body.data.nextCursor, null)

  const download = await app.inject({ method: 'GET', url: `/api/admin/backups/${id}/download`, headers: admin.auth })
  t.equal(download.statusCode, 200)
  t.equal(download.headers['content-type'], 'application/gzip')
  t.equal(Number(download.headers['content-length']), ready.size)
  t.match(download.headers['content-disposition'], `attachment; filename="plinth-backup-${id}.tar.gz"`)
  const file = join(tempDir(t), 'downloaded.tar.gz')
  writeFileSync(file, download.rawPayload)
  const { config } = app
  const sources = { dataDir: config.dataDir, reposDir: config.git.reposDir, hostingDir: config.hosting.dir, engine: config.mongodbUrl === null ? 'sqlite' as const : 'mongodb' as const }
  const manifest = await verifyBackup(sources, file)
  t.equal(manifest.files.length, ready.files)
  t.equal(manifest.includesKeys, false, 'the master key stays out')
  t.notOk(manifest.files.some((entry) => entry.path.startsWith('data/backups/')), 'BACKUP_DIR is left out of the backup')

  const removed = await call(app, 'DELETE', `/api/admin/backups/${id}`, admin.auth)
  t.same(removed.body, { success: true, data: { id, deleted: true } })
  t.notOk(existsSync(join(config.backup.dir, `plinth-backup-${id}.tar.gz`)), 'the archive is gone')
  for (const [method, url] of [['GET', `/api/admin/backups/${id}`], ['GET', `/api/admin/backups/${id}/download`], ['DELETE', `/api/admin/backups/${id}`]] as const) {
    const res = await call(app, method, url, admin.auth)
    t.match([res.status, res.body.code], [404, 'APP_BACKUP_NOT_FOUND'], `${method} ${url} after the delete`)
  }
})

t.test('pages with cursors; a cursor that is not one is 400; a backup not ready has no archive', async (t) => {
  const { app, admin } = await world(t)
  const ids: string[] = []
  for (let i = 0; i < 3; i++) ids.push((await call(app, 'POST', '/api/admin/backups', admin.auth)).body.data.id)
  const first = await call(app, 'GET', '/api/admin/backups?limit=2', admin.auth)
  t.same(first.body.data.items.map((item: { id: string }) => item.id), [ids[2], ids[1]], 'newest first')
  const second = await call(app, 'GET', `/api/admin/backups?limit=2&cursor=${encodeURIComponent(first.body.data.nextCursor as string)}`, admin.auth)
  t.same(second.body.data.items.map((item: { id: string }) => item.id), [ids[0]])
  t.equal(second.body.data.nextCursor, null)
  const bad = await call(app, 'GET', '/api/admin/backups?cursor=nonsense', admin.auth)
  t.match([bad.status, bad.body.code], [400, 'APP_INVALID_CURSOR'])

  for (const id of ids) await settled(app, admin.auth, id)
  // A backup whose job has not run yet (none was queued for this one): no archive, 409 naming its state.
  await app.backups.records.insertOne({
    _id: 'queued1', status: 'queued', origin: 'api', requestedBy: admin.id, createdAt: new Date(), startedAt: null, finishedAt: null, size: null, sha256: null, files: null, error: null, upload: null
  })
  const early = await call(app, 'GET', '/api/admin/backups/queued1/download', admin.auth)
  t.match([early.status, early.body.code, early.body.message], [409, 'APP_BACKUP_NOT_READY', /is queued/])
})

t.test('only a listed user, by session or unscoped PAT, now; everyone else is refused naming what is needed', async (t) => {
  const { app, admin, other, env } = await world(t)
  const pat = async (user: World['admin'], scopes?: string[]): Promise<Record<string, string>> => {
    const res = await call(app, 'POST', '/api/auth/api-keys', user.auth, { name: 'ops', ...(scopes === undefined ? {} : { scopes }) })
    return { authorization: `Bearer ${res.body.data.token as string}` }
  }
  const adminPat = await pat(admin)
  t.equal((await call(app, 'GET', '/api/admin/backups', adminPat)).status, 200, 'an administrator\'s unscoped PAT')

  const refusals: Array<[string, Record<string, string>, number, string, RegExp]> = [
    ['no credential', {}, 401, 'APP_UNAUTHORIZED', /./],
    ['a non-admin\'s session', other.auth, 403, 'APP_PLATFORM_ADMIN_REQUIRED', /Needs a platform administrator: this user is not listed in PLATFORM_ADMINS/],
    ['a non-admin\'s PAT', await pat(other), 403, 'APP_PLATFORM_ADMIN_REQUIRED', /not listed in PLATFORM_ADMINS/],
    ['an administrator\'s scoped PAT', await pat(admin, ['git.read']), 403, 'APP_PLATFORM_ADMIN_REQUIRED', /a personal access token with scopes never acts as one/]
  ]
  for (const [name, auth, status, code, message] of refusals) {
    for (const [method, url] of [['GET', '/api/admin/backups'], ['POST', '/api/admin/backups'], ['DELETE', '/api/admin/backups/x1']] as const) {
      const res = await call(app, method, url, auth)
      t.match([res.status, res.body.code], [status, code], `${name}: ${method} ${url}`)
      if (status === 403) t.match(res.body.message, message, name)
    }
  }

  // The same DATA_DIR, restarted without the administrator listed: the very same tokens are refused at once.
  const unlisted = await buildTestApp(t, { env: { ...env, PLATFORM_ADMINS: other.id } })
  for (const auth of [admin.auth, adminPat]) {
    const res = await call(unlisted, 'GET', '/api/admin/backups', auth)
    t.match([res.status, res.body.code], [403, 'APP_PLATFORM_ADMIN_REQUIRED'], 'taken off the list')
  }
  t.equal((await call(unlisted, 'GET', '/api/admin/backups', other.auth)).status, 200, 'the user now listed')

  // A listed user who no longer exists: their token is refused as any dead credential.
  await app.identity.users.records.deleteOne({ _id: admin.id })
  t.equal((await call(app, 'GET', '/api/admin/backups', admin.auth)).status, 401)
})

t.test('a scheduled run keeps BACKUP_KEEP scheduled backups and never prunes those asked for', async (t) => {
  const { app, admin } = await world(t, { BACKUP_KEEP: '1' })
  const asked = (await call(app, 'POST', '/api/admin/backups', admin.auth)).body.data.id as string
  await settled(app, admin.auth, asked)
  const first = await app.backups.runScheduled()
  t.same(first, { status: 'ready', pruned: 0, interrupted: 0 })
  const second = await app.backups.runScheduled()
  t.same(second, { status: 'ready', pruned: 1, interrupted: 0 }, 'the older scheduled one goes')
  const items = (await call(app, 'GET', '/api/admin/backups', admin.auth)).body.data.items as Array<{ id: string, origin: string, requestedBy: string | null }>
  t.same(items.map((item) => item.origin), ['schedule', 'api'])
  t.equal(items[1].id, asked)
  t.equal(items[0].requestedBy, null)
})

t.test('BACKUP_SCHEDULE as a cron expression makes the one recurring job wait for its fire time; unset, the job goes', async (t) => {
  const first = await buildTestApp(t, { env: { BACKUP_SCHEDULE: '15 4 * * *', BACKUP_SCHEDULE_TIMEZONE: 'Asia/Tokyo' } })
  const job = await first.jobs.get('-every:backup.scheduled')
  t.match(job, { type: 'backup.scheduled', status: 'queued', cron: { expression: '15 4 * * *', timezone: 'Asia/Tokyo' } })
  const runAt = job?.runAt as Date
  t.ok(runAt > new Date(), 'not due at start, as an interval would be')
  t.equal(runAt.getUTCHours() * 60 + runAt.getUTCMinutes(), 19 * 60 + 15, '04:15 in Tokyo is 19:15 UTC')
  const env = { DATA_DIR: first.config.dataDir, ...(first.config.mongodbUrl === null ? {} : { MONGODB_URL: first.config.mongodbUrl, MONGODB_DB: first.config.mongodbDb, PLINTH_MASTER_KEY: first.config.masterKey ?? '' }) }
  const unset = await buildTestApp(t, { env })
  t.equal(await unset.jobs.get('-every:backup.scheduled'), null, 'a restart without BACKUP_SCHEDULE unschedules it')
})
