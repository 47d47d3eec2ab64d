import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { BackupListQuery, BackupParams, BackupResponses } from '../../schemas/backups.js'
import { backupErrors as e } from '../../services/backup/errors.js'
import { commonErrors } from '../../services/platform/errors.js'
import { accepted, deleted, ok } from '../replies.js'

/**
 * `/api/admin/backups`: archives of the whole deployment (the store's
 * snapshot, uploaded files, repositories, hosting artifacts; never the
 * master key), made by a job and kept in BACKUP_DIR.
 */
const backupRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { backups } = app
  const tags = ['admin']

  app.post('', {
    schema: {
      operationId: 'createBackup',
      tags,
      summary: 'Back up the deployment',
      description: 'Answers 202 with the backup `queued`; a job writes the archive while the server keeps serving (the store is ' +
        'copied in one read transaction), reads it back through the restore\'s checks, then marks it `ready` or `failed`. ' +
        'The master key is never in it. On MongoDB the store is not in it: use mongodump or the provider\'s snapshots.',
      response: BackupResponses.accepted
    }
  }, async (request, reply) => accepted(reply, await backups.create(request.caller.user.userId)))

  app.get('', {
    config: { errors: [commonErrors.invalidCursor] },
    schema: {
      operationId: 'listBackups',
      tags,
      summary: 'Backups, newest first',
      querystring: BackupListQuery,
      response: BackupResponses.list
    }
  }, async (request) => ok(await backups.list(request.query)))

  app.get('/:backupId', {
    config: { errors: [e.backupNotFound] },
    schema: { operationId: 'getBackup', tags, summary: 'One backup', params: BackupParams, response: BackupResponses.backup }
  }, async (request) => ok(await backups.get(request.params.backupId)))

  app.get('/:backupId/download', {
    config: { errors: [e.backupNotFound, e.backupNotReady] },
    schema: {
      operationId: 'downloadBackup',
      tags,
      summary: 'A ready backup\'s archive',
      description: 'Streams the archive, restored with `npm run restore -- <file>` into an empty DATA_DIR. Errors are JSON.',
      params: BackupParams,
      response: BackupResponses.archive
    }
  }, async (request, reply) => {
    const archive = await backups.open(request.params.backupId)
    void reply.type('application/gzip').header('content-length', archive.size).header('cache-control', 'private, no-store')
      .header('content-disposition', `attachment; filename="${archive.filename}"`)
    return await reply.send(archive.body)
  })

  app.delete('/:backupId', {
    config: { errors: [e.backupNotFound] },
    schema: {
      operationId: 'deleteBackup',
      tags,
      summary: 'Delete a backup and its archive',
      description: 'A copy put in S3-compatible storage stays there.',
      params: BackupParams,
      response: BackupResponses.deleted
    }
  }, async (request) => {
    await backups.delete(request.params.backupId)
    return deleted(request.params.backupId)
  })
}

export default backupRoutes
