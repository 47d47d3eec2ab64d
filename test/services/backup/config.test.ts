import t from 'tap'
import { readFileSync } from 'node:fs'
import { Value } from '@sinclair/typebox/value'
import { ConfigError } from '../../../services/platform/config-env.js'
import { BackupConfig, parseBackupConfig } from '../../../services/backup/config.js'
import { IdentityConfig, parseIdentityConfig } from '../../../services/identity/config.js'

function variables (schema: Record<string, unknown>): string[] {
  const own = typeof schema.variable === 'string' ? [schema.variable] : []
  const nested = [...Object.values((schema.properties ?? {}) as Record<string, Record<string, unknown>>), ...((schema.anyOf ?? []) as Array<Record<string, unknown>>)]
  return [...own, ...nested.flatMap(variables)]
}

const S3 = { BACKUP_S3_ENDPOINT: 'http://127.0.0.1:9000/', BACKUP_S3_BUCKET: 'plinth-backups', BACKUP_S3_ACCESS_KEY_ID: 'AK', BACKUP_S3_SECRET_ACCESS_KEY: 'SK' }
const ADMIN = '01m8km39wqbqjmk5kqk0'

t.test('the parser gives what the schema describes, defaults and all', async (t) => {
  const full = { BACKUP_DIR: '/srv/backups', BACKUP_SCHEDULE: '6h', BACKUP_SCHEDULE_TIMEZONE: 'Europe/Berlin', BACKUP_KEEP: '3', ...S3, BACKUP_S3_REGION: 'eu-west-1', BACKUP_S3_PREFIX: 'prod/', BACKUP_S3_ALLOWED_HOSTS: '127.0.0.1', PROJECT_IMPORT_MAX_BYTES: '1000', PROJECT_IMPORT_MAX_ENTRY_BYTES: '2000', PROJECT_IMPORT_MAX_UNPACKED_BYTES: '3000' }
  const GIB = 1024 ** 3
  t.same(parseBackupConfig({}, '/srv/plinth'), { dir: '/srv/plinth/backups', schedule: null, keep: 7, s3: null, importMaxBytes: 4 * GIB, importMaxEntryBytes: 5 * GIB, importMaxUnpackedBytes: 16 * GIB })
  const parsed = parseBackupConfig(full, '/srv/plinth')
  t.same(parsed, {
    dir: '/srv/backups',
    schedule: 6 * 3_600_000,
    keep: 3,
    s3: { endpoint: 'http://127.0.0.1:9000', bucket: 'plinth-backups', prefix: 'prod/', region: 'eu-west-1', accessKeyId: 'AK', secretAccessKey: 'SK', allowedHosts: ['127.0.0.1'] },
    importMaxBytes: 1000,
    importMaxEntryBytes: 2000,
    importMaxUnpackedBytes: 3000
  })
  const cron = parseBackupConfig({ BACKUP_SCHEDULE: ' 30 3 * * 1-5 ', BACKUP_SCHEDULE_TIMEZONE: 'Europe/Berlin' }, '/d')
  t.same(cron.schedule, { expression: '30 3 * * 1-5', timezone: 'Europe/Berlin' }, 'a cron expression, read in the timezone given')
  t.same(parseBackupConfig({ BACKUP_SCHEDULE: '0 */6 * * *' }, '/d').schedule, { expression: '0 */6 * * *', timezone: 'UTC' }, 'UTC unless told')
  for (const config of [parseBackupConfig({}, '/d'), parsed, cron]) t.ok(Value.Check(BackupConfig, config))
  t.same(variables(BackupConfig).sort(), Object.keys(full).sort(), 'each setting names the one variable it is read from')
  t.same(parseIdentityConfig({ PLATFORM_ADMINS: ` ${ADMIN}, ${ADMIN} ,` }, { publicUrl: 'http://localhost' }).platformAdmins, [ADMIN], 'ids, each once')
  t.same(parseIdentityConfig({}, { publicUrl: 'http://localhost' }).platformAdmins, [], 'nobody unless listed')
})

t.test('each variable is in the README\'s configuration table, and a bad value names it', async (t) => {
  const readme = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8')
  const table = readme.slice(readme.indexOf('## Configuration'), readme.indexOf('\n## ', readme.indexOf('## Configuration') + 1))
  for (const variable of [...variables(BackupConfig), 'PLATFORM_ADMINS']) t.ok(table.includes(`\`${variable}\``), `${variable} is documented`)
  t.ok(variables(IdentityConfig).includes('PLATFORM_ADMINS'))
  const bad: Array<[string, Record<string, string>, RegExp?]> = [
    ['BACKUP_SCHEDULE', { BACKUP_SCHEDULE: 'daily' }, /or a cron expression/],
    ['BACKUP_SCHEDULE', { BACKUP_SCHEDULE: '5m' }, /from 15m to 365d/],
    ['BACKUP_SCHEDULE', { BACKUP_SCHEDULE: '0 3 * *' }, /must have 5 fields/],
    ['BACKUP_SCHEDULE', { BACKUP_SCHEDULE: '0 25 * * *' }, /is not a cron expression/],
    ['BACKUP_SCHEDULE', { BACKUP_SCHEDULE: '*/5 * * * *' }, /more often than every 15 minutes/],
    ['BACKUP_SCHEDULE', { BACKUP_SCHEDULE: '0,10 3 * * *' }, /more often than every 15 minutes/],
    ['BACKUP_SCHEDULE', { BACKUP_SCHEDULE: '0 0 30 2 *' }, /never fires/],
    ['BACKUP_SCHEDULE_TIMEZONE', { BACKUP_SCHEDULE: '0 3 * * *', BACKUP_SCHEDULE_TIMEZONE: 'Mars/Olympus' }, /not an IANA timezone/],
    ['BACKUP_KEEP', { BACKUP_KEEP: '0' }],
    ['BACKUP_S3_SECRET_ACCESS_KEY', { ...S3, BACKUP_S3_SECRET_ACCESS_KEY: '' }, /must be set with the other S3 settings \(BACKUP_S3_ENDPOINT, BACKUP_S3_BUCKET, BACKUP_S3_ACCESS_KEY_ID\): all four, or none/],
    ['BACKUP_S3_ENDPOINT', { ...S3, BACKUP_S3_ENDPOINT: 'ftp://x' }],
    ['BACKUP_S3_BUCKET', { ...S3, BACKUP_S3_BUCKET: 'Bad_Bucket' }],
    ['BACKUP_S3_REGION', { ...S3, BACKUP_S3_REGION: 'EU WEST' }],
    ['BACKUP_S3_PREFIX', { ...S3, BACKUP_S3_PREFIX: '../up' }],
    ['BACKUP_S3_ALLOWED_HOSTS', { ...S3, BACKUP_S3_ALLOWED_HOSTS: 'http://x' }]
  ]
  for (const [variable, env, message] of bad) {
    const error = (() => { try { parseBackupConfig(env, '/d') } catch (caught) { return caught } })()
    t.ok(error instanceof ConfigError && error.variable === variable && (message === undefined || message.test(error.message)), `${JSON.stringify(env)} is refused, naming ${variable}`)
  }
  for (const value of ['admin@example.com', `${ADMIN},ADMIN`, '01M8KM39WQBQJMK5KQK0']) {
    t.throws(() => parseIdentityConfig({ PLATFORM_ADMINS: value }, { publicUrl: 'http://localhost' }), { name: 'ConfigError', message: /PLATFORM_ADMINS must list platform user ids/ }, value)
  }
})
