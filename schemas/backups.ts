import { Type, type Static } from '@sinclair/typebox'
import { DateTime, Deleted, GzipArchive, Id } from './common.js'
import { Created, Envelope } from './envelope.js'

/** Backups through the API (docs/operations.md, "Backups"): what a platform administrator sees. */

export const BACKUP_LIMITS = { pageDefault: 20, pageMax: 100 } as const

export const BACKUP_STATUSES = ['queued', 'running', 'ready', 'failed'] as const
export type BackupStatusT = typeof BACKUP_STATUSES[number]

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T, description: string) => Type.Union([schema, Type.Null()], { description })

export const Backup = Type.Object({
  id: Type.String(),
  status: Type.Union(BACKUP_STATUSES.map((status) => Type.Literal(status)), { description: '`queued`, `running` (a job on the long lane), then `ready` or `failed`' }),
  origin: Type.Union([Type.Literal('api'), Type.Literal('schedule')], { description: 'Asked for through the API, or made by BACKUP_SCHEDULE (only these are pruned to BACKUP_KEEP)' }),
  requestedBy: Nullable(Type.String(), 'The platform administrator who asked; null for a scheduled one'),
  createdAt: DateTime,
  finishedAt: Nullable(DateTime, 'When it became ready or failed'),
  size: Nullable(Type.Integer({ minimum: 0 }), 'The archive\'s bytes, once ready'),
  sha256: Nullable(Type.String({ pattern: '^[0-9a-f]{64}$' }), 'The SHA-256 of the whole archive, once ready'),
  files: Nullable(Type.Integer({ minimum: 0 }), 'Files in the archive\'s manifest, once ready'),
  engine: Type.Union([Type.Literal('sqlite'), Type.Literal('mongodb')], { description: '`mongodb`: the store is not in the archive (use mongodump or the provider\'s snapshots)' }),
  checksum: Type.Union([Type.Literal('verified'), Type.Literal('missing'), Type.Literal('changed'), Type.Null()], {
    description: '`verified`: read back through the restore\'s checks (manifest, each file\'s SHA-256) when made, and still of that size; ' +
      '`missing`: its file is gone from BACKUP_DIR; `changed`: its size is no longer the one verified; null until ready'
  }),
  error: Nullable(Type.String(), 'Why it failed'),
  upload: Nullable(Type.Object({
    status: Type.Union([Type.Literal('uploaded'), Type.Literal('failed')]),
    key: Type.String({ description: 'The object\'s key in BACKUP_S3_BUCKET' }),
    error: Nullable(Type.String(), 'Why the upload failed')
  }), 'The copy in S3-compatible storage, when BACKUP_S3_ENDPOINT is set')
}, { $id: 'Backup' })
export type BackupT = Static<typeof Backup>

export const BackupParams = Type.Object({ backupId: Id })
export const BackupListQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: BACKUP_LIMITS.pageMax, default: BACKUP_LIMITS.pageDefault })),
  cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 2048, description: 'The `nextCursor` of the page before' }))
}, { additionalProperties: false })
export type BackupListQueryT = Static<typeof BackupListQuery>

export const backupSchemas = [Backup]

export const BackupResponses = {
  accepted: { 202: Created(Type.Ref(Backup)) },
  backup: { 200: Envelope(Type.Ref(Backup)) },
  list: { 200: Envelope(Type.Object({ items: Type.Array(Type.Ref(Backup)), nextCursor: Type.Union([Type.String(), Type.Null()]) })) },
  deleted: { 200: Envelope(Deleted) },
  archive: GzipArchive('The archive: a gzip-compressed tar with its manifest, as `npm run restore` reads it', 'with the archive\'s name')
}
