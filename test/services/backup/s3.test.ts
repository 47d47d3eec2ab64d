import t from 'tap'
import { createHash, randomBytes } from 'node:crypto'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import S3rver from 's3rver'
import { PART_BYTES, partSize, putBackup, signV4 } from '../../../services/backup/s3.js'
import { AddressGuard } from '../../../services/outbound/internal-addresses.js'
import { buildTestApp, call, signUp, tempDir } from '../../helper.js'

t.test('Signature Version 4 as AWS\'s published example of a GET signs it', async (t) => {
  // docs.aws.amazon.com, "Signature Calculations for the Authorization Header", example GET Object.
  const empty = createHash('sha256').update('').digest('hex')
  const authorization = signV4({
    method: 'GET',
    path: '/test.txt',
    headers: { Host: 'examplebucket.s3.amazonaws.com', Range: 'bytes=0-9', 'x-amz-content-sha256': empty, 'x-amz-date': '20130524T000000Z' },
    payloadSha256: empty,
    region: 'us-east-1',
    accessKeyId: 'AKIAIOSFODNN7EXAMPLE',
    secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
    amzDate: '20130524T000000Z'
  })
  t.equal(authorization, 'AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, ' +
    'SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41')
})

t.test('a ready backup is put in an S3-compatible bucket (s3rver on loopback), allowed through the address guard', async (t) => {
  const server = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory: tempDir(t), configureBuckets: [{ name: 'plinth-backups', configs: [] }] })
  const { port } = await server.run()
  t.teardown(async () => { await server.close() })
  const s3 = { BACKUP_S3_ENDPOINT: `http://127.0.0.1:${port}`, BACKUP_S3_BUCKET: 'plinth-backups', BACKUP_S3_ACCESS_KEY_ID: 'S3RVER', BACKUP_S3_SECRET_ACCESS_KEY: 'S3RVER' }
  const first = await buildTestApp(t)
  const admin = await signUp(first, 'admin@example.com')
  const shared = { DATA_DIR: first.config.dataDir, ...(first.config.mongodbUrl === null ? {} : { MONGODB_URL: first.config.mongodbUrl, MONGODB_DB: first.config.mongodbDb, PLINTH_MASTER_KEY: first.config.masterKey ?? '' }) }

  const finished = async (app: typeof first): Promise<Record<string, any>> => {
    const id = (await call(app, 'POST', '/api/admin/backups', admin.auth)).body.data.id as string
    for (let i = 0; i < 600; i++) {
      const view = (await call(app, 'GET', `/api/admin/backups/${id}`, admin.auth)).body.data
      if (view.status === 'ready' || view.status === 'failed') return view
      await sleep(50)
    }
    throw new Error('the backup did not finish')
  }

  // Loopback is internal: without the operator's allow-list the guard refuses it, and the backup stays ready on disk.
  const guarded = await buildTestApp(t, { env: { ...shared, ...s3, PLATFORM_ADMINS: admin.id } })
  const refused = await finished(guarded)
  t.match(refused, { status: 'ready', checksum: 'verified', upload: { status: 'failed', error: /reaches 127\.0\.0\.1, a loopback address; allow it in BACKUP_S3_ALLOWED_HOSTS/ } })
  await guarded.close()

  const app = await buildTestApp(t, { env: { ...shared, ...s3, BACKUP_S3_ALLOWED_HOSTS: '127.0.0.1', PLATFORM_ADMINS: admin.id } })
  const view = await finished(app)
  t.match(view, { status: 'ready', upload: { status: 'uploaded', key: `plinth/plinth-backup-${view.id as string}.tar.gz`, error: null } })
  const stored = await fetch(`http://127.0.0.1:${port}/plinth-backups/${view.upload.key as string}`)
  t.equal(stored.status, 200)
  const bytes = Buffer.from(await stored.arrayBuffer())
  t.equal(createHash('sha256').update(bytes).digest('hex'), view.sha256, 'the bucket holds the very archive')
  t.same(bytes, readFileSync(`${app.config.backup.dir}/plinth-backup-${view.id as string}.tar.gz`))

  // A bucket that does not exist: the service's answer is the reason.
  const missing = await buildTestApp(t, { env: { ...shared, ...s3, BACKUP_S3_BUCKET: 'no-such-bucket', BACKUP_S3_ALLOWED_HOSTS: '127.0.0.1', PLATFORM_ADMINS: admin.id } })
  t.match(await finished(missing), { status: 'ready', upload: { status: 'failed', error: 'the storage answered 404 (NoSuchBucket)' } })
})

t.test('an archive larger than one part goes as a multipart upload, each part signed; the bucket holds the very bytes', async (t) => {
  const server = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory: tempDir(t), configureBuckets: [{ name: 'plinth-backups', configs: [] }] })
  const { port } = await server.run()
  t.teardown(async () => { await server.close() })
  const config = { endpoint: `http://127.0.0.1:${port}`, bucket: 'plinth-backups', prefix: 'plinth/', region: 'us-east-1', accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER', allowedHosts: ['127.0.0.1'] }
  const guard = new AddressGuard({ allowedHosts: config.allowedHosts })
  const MIB = 1024 * 1024
  const file = join(tempDir(t), 'archive.tar.gz')
  const data = randomBytes(11 * MIB + 123)
  writeFileSync(file, data)
  const sha256 = createHash('sha256').update(data).digest('hex')
  const events: string[] = []
  server.on('event', (event: { Records: Array<{ eventName: string }> }) => { events.push(event.Records[0].eventName) })
  const { key } = await putBackup(config, guard, file, 'big.tar.gz', data.length, sha256, new Date(), 5 * MIB)
  t.equal(key, 'plinth/big.tar.gz')
  const stored = Buffer.from(await (await fetch(`http://127.0.0.1:${port}/plinth-backups/${key}`)).arrayBuffer())
  t.equal(stored.length, data.length)
  t.equal(createHash('sha256').update(stored).digest('hex'), sha256, 'three parts put back together into the archive')
  t.same(events, ['ObjectCreated:Post'], 'made by completing a multipart upload (s3rver names it Post), not by one PUT')
  await putBackup(config, guard, file, 'whole.tar.gz', data.length, sha256, new Date())
  t.same(events.slice(1), ['ObjectCreated:Put'], 'within one part, one PUT')

  const missing = { ...config, bucket: 'no-such-bucket' }
  await t.rejects(putBackup(missing, guard, file, 'refused.tar.gz', data.length, sha256, new Date(), 5 * MIB), { message: 'the storage answered 404 (NoSuchBucket)' }, 'a refused start is the service\'s answer')
})

t.test('a multipart upload stays within S3\'s 10,000 parts: larger archives get larger parts, in whole MiB', async (t) => {
  const MIB = 1024 * 1024
  t.equal(partSize(1), PART_BYTES, 'a small archive: the usual part')
  t.equal(partSize(10_000 * PART_BYTES), PART_BYTES, 'exactly 10,000 usual parts still fit')
  const big = 10_000 * PART_BYTES + 1
  const part = partSize(big)
  t.equal(part, PART_BYTES + MIB, 'one byte more: parts grow by a MiB')
  t.ok(Math.ceil(big / part) <= 10_000, 'and the parts fit the limit')
  t.equal(partSize(3 * 1024 ** 4) % MIB, 0, 'a 3 TiB archive: a whole number of MiB')
  t.ok(Math.ceil(3 * 1024 ** 4 / partSize(3 * 1024 ** 4)) <= 10_000, 'in at most 10,000 parts')
})
