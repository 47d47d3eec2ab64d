import { resolve } from 'node:path'
import { Type, type Static } from '@sinclair/typebox'
import { allowedHostList, ConfigError, httpUrl, integer, text, type Env } from '../platform/config-env.js'
import { checkTrigger, nextFires } from '../auxiliary/schedule-times.js'

const S3Config = Type.Object({
  endpoint: Type.String({ variable: 'BACKUP_S3_ENDPOINT', description: 'The S3-compatible service\'s URL (https://s3.eu-west-1.amazonaws.com, http://minio.internal:9000); objects are addressed path-style' }),
  bucket: Type.String({ pattern: '^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$', variable: 'BACKUP_S3_BUCKET', description: 'The bucket backups are put in' }),
  prefix: Type.String({ variable: 'BACKUP_S3_PREFIX', description: 'Put before each object\'s name (`plinth/` by default)' }),
  region: Type.String({ pattern: '^[a-z0-9-]{1,32}$', variable: 'BACKUP_S3_REGION', description: 'The region signed into each request (`us-east-1` by default)' }),
  accessKeyId: Type.String({ minLength: 1, variable: 'BACKUP_S3_ACCESS_KEY_ID', description: 'The access key' }),
  secretAccessKey: Type.String({ minLength: 1, variable: 'BACKUP_S3_SECRET_ACCESS_KEY', description: 'Its secret' }),
  allowedHosts: Type.Array(Type.String(), {
    variable: 'BACKUP_S3_ALLOWED_HOSTS',
    description: 'Host names, *.suffix wildcards, addresses and CIDR ranges the endpoint may be at although internal (a MinIO on the private network); others are refused'
  })
})

/** Backups through the API (docs/operations.md, "Backups"), as `loadConfig().backup`. */
export const BackupConfig = Type.Object({
  dir: Type.String({ variable: 'BACKUP_DIR', description: 'Where archives made through the API are kept; defaults to DATA_DIR/backups, left out of every backup' }),
  schedule: Type.Union([
    Type.Integer({ minimum: 1, description: 'Every so many milliseconds' }),
    Type.Object({
      expression: Type.String({ description: 'A cron expression, 5 fields (or 6, seconds first)' }),
      timezone: Type.String({ variable: 'BACKUP_SCHEDULE_TIMEZONE', description: 'The IANA timezone a cron BACKUP_SCHEDULE is read in (`UTC` by default)' })
    }),
    Type.Null()
  ], { variable: 'BACKUP_SCHEDULE', description: 'A backup every so long (`6h`, `1d`, `30m`) or at a cron expression\'s times (`0 3 * * *`); unset, none is scheduled' }),
  keep: Type.Integer({ minimum: 1, variable: 'BACKUP_KEEP', description: 'How many scheduled backups are kept; older ones are deleted after each scheduled run' }),
  s3: Type.Union([S3Config, Type.Null()], { description: 'When BACKUP_S3_ENDPOINT is set, each backup is also put in this bucket' }),
  importMaxBytes: Type.Integer({ minimum: 1, variable: 'PROJECT_IMPORT_MAX_BYTES', description: 'The largest project archive an import takes, as uploaded (4 GiB by default); a larger one is refused with 413' }),
  importMaxEntryBytes: Type.Integer({ minimum: 1, variable: 'PROJECT_IMPORT_MAX_ENTRY_BYTES', description: 'The most one entry of a project archive may unpack to (5 GiB by default, a file\'s largest size); a larger one is refused before anything is written' }),
  importMaxUnpackedBytes: Type.Integer({ minimum: 1, variable: 'PROJECT_IMPORT_MAX_UNPACKED_BYTES', description: 'The most all entries of a project archive together may unpack to (16 GiB by default); a larger total is refused before anything is written' })
})
export type BackupConfig = Static<typeof BackupConfig>
export type BackupS3Config = Static<typeof S3Config>

const GIB = 1024 * 1024 * 1024

const UNITS: Record<string, number> = { m: 60_000, h: 3_600_000, d: 86_400_000 }

const MIN_SPACING_MS = 15 * 60_000

// The one way fire times are computed is schedule-times.ts (croner), shared with the project schedules and the job queue.
function schedule (env: Env, name: string): BackupConfig['schedule'] {
  const raw = text(env, name)
  if (raw === undefined) return null
  const match = /^(\d{1,4})([mhd])$/.exec(raw)
  if (match === null && /\s/.test(raw)) return cron(env, name, raw)
  const ms = match === null ? NaN : Number(match[1]) * UNITS[match[2]]
  if (!(ms >= MIN_SPACING_MS && ms <= 365 * 86_400_000)) throw new ConfigError(name, `must be an interval from 15m to 365d such as 6h, 1d or 30m, or a cron expression such as "0 3 * * *", got "${raw}"`)
  return ms
}

function cron (env: Env, name: string, expression: string): BackupConfig['schedule'] {
  const timezone = text(env, 'BACKUP_SCHEDULE_TIMEZONE') ?? 'UTC'
  const trigger = { kind: 'cron' as const, expression, timezone }
  const now = new Date()
  try {
    checkTrigger(trigger, now, name)
  } catch (error) {
    const issue = (error as { details?: { fields?: Array<{ path: string, message: string }> } }).details?.fields?.[0]
    throw new ConfigError(issue?.path.endsWith('.timezone') === true ? 'BACKUP_SCHEDULE_TIMEZONE' : name, issue?.message ?? (error as Error).message)
  }
  // Checked over the next fires, as the interval's 15m floor: a backup every minute would bury the store in archives.
  const fires = nextFires(trigger, now, now, 64)
  if (fires.some((fire, index) => index > 0 && fire.getTime() - fires[index - 1].getTime() < MIN_SPACING_MS)) {
    throw new ConfigError(name, `must not fire more often than every 15 minutes, got "${expression}"`)
  }
  return { expression, timezone }
}

function s3 (env: Env): BackupS3Config | null {
  const names = ['BACKUP_S3_ENDPOINT', 'BACKUP_S3_BUCKET', 'BACKUP_S3_ACCESS_KEY_ID', 'BACKUP_S3_SECRET_ACCESS_KEY'] as const
  const [endpoint, bucket, accessKeyId, secretAccessKey] = names.map((name) => text(env, name))
  if ([endpoint, bucket, accessKeyId, secretAccessKey].every((value) => value === undefined)) return null
  const missing = names.find((name) => text(env, name) === undefined)
  if (missing !== undefined) throw new ConfigError(missing, `must be set with the other S3 settings (${names.filter((name) => name !== missing).join(', ')}): all four, or none`)
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket as string)) throw new ConfigError('BACKUP_S3_BUCKET', `must be a bucket name (3 to 63 lower-case letters, digits, dots and hyphens), got "${bucket as string}"`)
  const region = text(env, 'BACKUP_S3_REGION') ?? 'us-east-1'
  if (!/^[a-z0-9-]{1,32}$/.test(region)) throw new ConfigError('BACKUP_S3_REGION', `must be a region name such as eu-west-1, got "${region}"`)
  const prefix = text(env, 'BACKUP_S3_PREFIX') ?? 'plinth/'
  if (prefix.startsWith('/') || prefix.includes('..') || /[^\w./-]/.test(prefix)) throw new ConfigError('BACKUP_S3_PREFIX', `must be a relative key prefix of letters, digits, '.', '_', '-' and '/', got "${prefix}"`)
  return {
    endpoint: httpUrl('BACKUP_S3_ENDPOINT', endpoint as string),
    bucket: bucket as string,
    prefix,
    region,
    accessKeyId: accessKeyId as string,
    secretAccessKey: secretAccessKey as string,
    allowedHosts: allowedHostList(env, 'BACKUP_S3_ALLOWED_HOSTS')
  }
}

export function parseBackupConfig (env: Env, dataDir: string): BackupConfig {
  return {
    dir: resolve(dataDir, text(env, 'BACKUP_DIR') ?? 'backups'),
    schedule: schedule(env, 'BACKUP_SCHEDULE'),
    keep: integer(env, 'BACKUP_KEEP', 7, 1, 10_000),
    s3: s3(env),
    importMaxBytes: integer(env, 'PROJECT_IMPORT_MAX_BYTES', 4 * GIB, 1, 1024 * GIB),
    importMaxEntryBytes: integer(env, 'PROJECT_IMPORT_MAX_ENTRY_BYTES', 5 * GIB, 1, 1024 * GIB),
    importMaxUnpackedBytes: integer(env, 'PROJECT_IMPORT_MAX_UNPACKED_BYTES', 16 * GIB, 1, 4096 * GIB)
  }
}
