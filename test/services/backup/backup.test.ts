import t from 'tap'
import { execFile } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { gunzipSync, gzipSync } from 'node:zlib'
import { buildApp } from '../../../app.js'
import { loadConfig } from '../../../services/config.js'
import { restoreBackup } from '../../../services/backup/restore.js'
import { snapshotStore } from '../../../services/backup/backup.js'
import Database from 'better-sqlite3'
import { call, registerEndUser, tempDir, testEngine } from '../../helper.js'
import { gitClient, gitWorld } from '../../routes/git/fixtures.js'

const ROOT = join(import.meta.dirname, '../../..')
const sha256 = (data: Buffer): string => createHash('sha256').update(data).digest('hex')

interface Run { code: number, stdout: string, stderr: string }

/** The operator's command, `npm run backup|restore -- <file>`, in its own process on the directories `DATA_DIR` names. */
async function cli (args: string[], dataDir: string): Promise<Run> {
  return await new Promise((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', join(ROOT, 'backup-cli.ts'), ...args], { env: { PATH: process.env.PATH, DATA_DIR: dataDir, LOG_LEVEL: 'silent' }, cwd: ROOT }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : 1, stdout, stderr })
    })
  })
}

async function upload (app: Parameters<typeof call>[0], url: string, auth: Record<string, string>, data: Buffer): Promise<string> {
  const boundary = `----plinth${randomBytes(8).toString('hex')}`
  const payload = Buffer.concat([
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="f.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`),
    data,
    Buffer.from(`\r\n--${boundary}--\r\n`)
  ])
  const res = await app.inject({ method: 'POST', url, headers: { ...auth, 'content-type': `multipart/form-data; boundary=${boundary}` }, payload })
  if (res.statusCode !== 200 && res.statusCode !== 201) throw new Error(`upload: ${res.body}`)
  return res.json().data.file.id as string
}

const empty = (dir: string): string[] => readdirSync(dir)

t.test('a backup taken while writes go on restores into a fresh DATA_DIR: records, files, repositories', { skip: testEngine !== 'sqlite' && 'the embedded store only: MongoDB is backed up with mongodump' }, async (t) => {
  const world = await gitWorld(t)
  const { app, projectId } = world
  await call(app, 'POST', `/api/projects/${projectId}/auth/toggle`, world.owner.auth, { enabled: true })
  const methods = Object.fromEntries(['list', 'get', 'create', 'upload', 'download'].map((m) => [m, { enabled: true, rule: { requireAuth: true } }]))
  const defined = await call(app, 'POST', `/api/projects/${projectId}/collections`, world.owner.auth, {
    name: 'posts', fields: [{ name: 'title', type: 'text' }, { name: 'f', type: 'file' }], methods
  })
  t.equal(defined.status, 201)
  const ann = await registerEndUser(app, projectId, 'ann@example.com')
  const posts = `/api/p/${projectId}/posts`
  const create = async (title: string): Promise<string> => {
    const res = await call(app, 'POST', posts, ann.auth, { title })
    if (res.status !== 201) throw new Error(`create: ${JSON.stringify(res.body)}`)
    return res.body.data.id as string
  }
  const files = new Map<string, { fileId: string, sha: string, data: Buffer }>()
  for (const size of [1, 70_000, 300_000]) {
    const id = await create(`with ${size} bytes`)
    const data = randomBytes(size)
    files.set(id, { fileId: await upload(app, `${posts}/${id}/files/f`, ann.auth, data), sha: sha256(data), data })
  }
  const git = gitClient(t)
  t.equal((await world.createRepo({ name: 'Site' })).status, 201)
  const token = await world.pat(world.owner.auth)
  const work = await git.workTree('site', [{ 'README.md': '# site\n' }, { 'src/index.html': '<p>hi</p>\n' }])
  t.equal((await git.run(['push', world.url('site', token), 'main'], { cwd: work })).code, 0)
  const head = (await git.run(['rev-parse', 'HEAD'], { cwd: work })).stdout.trim()

  // Writes keep coming from this process while another one takes the backup.
  const acknowledged: string[] = []
  const state = { stop: false }
  const writer = (async () => {
    for (let i = 0; !state.stop; i++) {
      acknowledged.push(await create(`load ${i}`))
      await sleep(5)
    }
  })()
  while (acknowledged.length < 20) await sleep(5)
  const beforeBackup = [...acknowledged]
  const archive = join(tempDir(t, 'plinth-backups-'), 'plinth.tar.gz')
  const backup = await cli(['backup', archive, '--include-keys'], app.config.dataDir)
  state.stop = true
  await writer
  t.equal(backup.code, 0, backup.stderr)
  t.match(backup.stdout, /backup written to .*keys included/)
  t.ok(acknowledged.length > beforeBackup.length, `writes went on during the backup (${acknowledged.length - beforeBackup.length} more)`)

  const restored = tempDir(t, 'plinth-restored-')
  const restore = await cli(['restore', archive], restored)
  t.equal(restore.code, 0, restore.stderr)
  const again = await cli(['restore', archive], restored)
  t.equal(again.code, 1)
  t.match(again.stderr, /DATA_DIR \(.*\) is not empty/, 'refused over a non-empty DATA_DIR')

  const copy = await buildApp(loadConfig({ LOG_LEVEL: 'silent', DATA_DIR: restored, GATEWAY_PORT: 'off' }))
  t.teardown(async () => { await copy.close() })
  await copy.listen({ port: 0, host: '127.0.0.1' })
  const port = (copy.server.address() as { port: number }).port
  let missing = 0
  for (const id of beforeBackup) if ((await call(copy, 'GET', `${posts}/${id}`, ann.auth)).status !== 200) missing++
  t.equal(missing, 0, `every one of the ${beforeBackup.length} records acknowledged before the backup began is there, read with a token of the old server`)
  for (const [id, { fileId, sha }] of files) {
    const res = await copy.inject({ method: 'GET', url: `${posts}/${id}/files/f/${fileId}`, headers: ann.auth })
    t.equal(res.statusCode, 200)
    t.equal(sha256(res.rawPayload), sha, `the file of ${id} has its bytes`)
  }
  const clone = await git.run(['clone', `http://x-token:${token}@127.0.0.1:${port}/git/${projectId}/site.git`, 'restored'])
  t.equal(clone.code, 0, clone.stderr)
  t.equal((await git.run(['rev-parse', 'HEAD'], { cwd: join(git.home, 'restored') })).stdout.trim(), head, 'the clone has the pushed history')
  t.equal(readFileSync(join(git.home, 'restored', 'src/index.html'), 'utf8'), '<p>hi</p>\n')

  await t.test('a damaged, tampered or foreign archive is refused and nothing is left behind', async (t) => {
    const original = readFileSync(archive)
    const tar = gunzipSync(original)
    const refuse = async (name: string, bytes: Buffer, why: RegExp): Promise<void> => {
      const file = join(tempDir(t, 'plinth-bad-'), name)
      writeFileSync(file, bytes)
      const target = tempDir(t, 'plinth-target-')
      await t.rejects(restoreBackup({ dataDir: target, reposDir: join(target, 'git'), hostingDir: join(target, 'hosting'), engine: 'sqlite' }, file), { code: 'APP_BACKUP_ARCHIVE_INVALID', status: 400, message: why }, name)
      t.same(empty(target), [], `${name}: the target is left empty`)
    }
    // A byte of an uploaded file's content changed, the archive otherwise well formed.
    const { fileId, data } = [...files.values()][2]
    const at = tar.indexOf(data.subarray(1000, 1064))
    t.ok(at > 0, 'the file is in the archive')
    const tampered = Buffer.from(tar)
    tampered[at] ^= 0xff
    await refuse('tampered.tar.gz', gzipSync(tampered), new RegExp(`data/files/.*${fileId}.* does not match its checksum`))
    const cut = Buffer.from(original)
    cut[Math.floor(cut.length / 2)] ^= 0xff
    await refuse('corrupted.tar.gz', cut, /gzip|damaged|checksum/)
    await refuse('short.tar.gz', gzipSync(tar.subarray(0, tar.length - 4096)), /no manifest\.json|ends in the middle/)
    await refuse('not-gzip.tar.gz', Buffer.from('PK\x03\x04 a zip, not a backup'), /not a gzip-compressed archive/)
    await refuse('foreign.tar.gz', gzipSync(Buffer.concat([rewriteHeader(tar.subarray(0, 512), '../../etc/passwd'), Buffer.alloc(1024)])), /not a path a backup writes/)
    // A pax header that claims 8 GiB: refused from its header, not read into memory first.
    await refuse('pax-bomb.tar.gz', gzipSync(Buffer.concat([rewriteHeader(tar.subarray(0, 512), 'pax', { type: 'x', size: '77777777777' }), Buffer.alloc(1024)])), /pax header .* claims 8589934591 bytes/)
    const folder = tempDir(t, 'plinth-folder-')
    const target = tempDir(t, 'plinth-target-')
    await t.rejects(restoreBackup({ dataDir: target, reposDir: join(target, 'git'), hostingDir: join(target, 'hosting'), engine: 'sqlite' }, folder), { code: 'APP_BACKUP_ARCHIVE_INVALID', message: /is not a file/ }, 'a folder named as the archive')
  })
})

/** The first header of `tar`, renamed (and given another type or octal size), with its checksum made right again. */
function rewriteHeader (block: Buffer, name: string, change: { type?: string, size?: string } = {}): Buffer {
  const out = Buffer.from(block)
  out.fill(0, 0, 100)
  out.write(name, 0)
  if (change.type !== undefined) out.write(change.type, 156)
  if (change.size !== undefined) out.write(`${change.size}\0`, 124)
  out.fill(0x20, 148, 156)
  let sum = 0
  for (const byte of out) sum += byte
  out.write(sum.toString(8).padStart(6, '0') + '\0 ', 148)
  return out
}

t.test('the store\'s snapshot is owner-only from its first byte (it holds every hash and sealed secret)', async (t) => {
  const dataDir = tempDir(t, 'plinth-snap-')
  const db = new Database(join(dataDir, 'plinth.db'))
  db.exec('CREATE TABLE kept (value TEXT); INSERT INTO kept VALUES (\'a secret\')')
  db.close()
  const previous = process.umask(0o022)
  t.teardown(() => { process.umask(previous) })
  const target = join(tempDir(t, 'plinth-snap-out-'), 'snapshot.db')
  snapshotStore(dataDir, target)
  t.equal(statSync(target).mode & 0o777, 0o600)
  const copy = new Database(target, { readonly: true })
  t.equal(copy.prepare('SELECT value FROM kept').pluck().get(), 'a secret', 'and it is the store\'s copy')
  copy.close()
})

t.test('a restore of an archive that is not there names the file, and writes nothing', async (t) => {
  const dataDir = join(tempDir(t), 'data')
  const missing = join(tempDir(t), 'nightly.tar.gz')
  const run = await cli(['restore', missing], dataDir)
  t.equal(run.code, 1)
  t.equal(run.stderr.trim(), `The archive ${missing} does not exist`)
  t.notOk(existsSync(dataDir), 'no DATA_DIR made')
})
