import { createReadStream, createWriteStream } from 'node:fs'
import { Transform } from 'node:stream'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pipeline } from 'node:stream/promises'
import multipart from '@fastify/multipart'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { ProjectIdParams } from '../../schemas/projects.js'
import { OrgParams } from '../../schemas/organizations.js'
import { ProjectArchiveMultipart, ProjectArchiveResponses } from '../../schemas/project-archives.js'
import { commonErrors } from '../../services/platform/errors.js'
import { fileErrors } from '../../services/files/errors.js'
import { projectArchiveErrors } from '../../services/backup/project-archive.js'
import { FORM_LIMITS, formFile } from '../data/multipart-file.js'
import { ok } from '../replies.js'

const tags = ['projects']

/** `POST /api/projects/:projectId/export`: the project's archive, streamed from a temporary file removed once sent. */
export const projectExportRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post('', {
    config: { auth: 'platform', parent: 'project', permission: 'project.export' },
    schema: {
      operationId: 'exportProject',
      tags,
      summary: 'Export the project to a portable archive: definitions, records, end users, files, repositories',
      description: 'A gzip-compressed tar with a manifest (format, server version, counts, what was left out, a SHA-256 per entry), ' +
        'for importProject on this or another server. Secrets, tokens and sessions stay here (docs/export.md).',
      params: ProjectIdParams,
      response: ProjectArchiveResponses.exported
    }
  }, async (request, reply) => {
    const { project } = request.scope
    const { file, dispose } = await app.projectArchives.export(project)
    const stream = createReadStream(file)
    // Removed once the stream closes: read to its end, or destroyed when the client goes away.
    stream.once('close', () => { void dispose() })
    const name = `${project.slug}-${new Date().toISOString().slice(0, 10)}.tar.gz`
    return await reply.type('application/gzip').header('content-disposition', `attachment; filename="${name}"`).send(stream)
  })
}

/** The form's own bytes around the archive (boundaries, part headers): a body past the limit by more is refused unread. */
const FORM_OVERHEAD = 64 * 1024

/** Passes the bytes through, refusing with 413 once more than `limit` have come. */
function capped (limit: number): Transform {
  let seen = 0
  return new Transform({
    transform (chunk: Buffer, _encoding, done) {
      seen += chunk.length
      done(seen > limit ? projectArchiveErrors.archiveTooLarge({ limit }) : null, chunk)
    }
  })
}

/** `POST /api/organizations/:orgId/projects/import`: a new project from an archive, all or nothing. */
export const projectImportRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const limit = app.config.backup.importMaxBytes
  // One byte past the limit, so `capped` sees the excess and answers 413 before the parser cuts the file (read as a broken form, 400).
  await app.register(multipart, { limits: { ...FORM_LIMITS, fileSize: limit + 1 } })

  app.post('/import', {
    config: {
      auth: 'platform',
      parent: 'organization',
      permission: 'project.import',
      errors: [
        commonErrors.unsupportedMediaType, fileErrors.multipartInvalid, fileErrors.fileRequired, fileErrors.multipartTooManyParts,
        projectArchiveErrors.archiveInvalid, projectArchiveErrors.archiveTooLarge, projectArchiveErrors.entryTooLarge,
        projectArchiveErrors.unpacksTooLarge, projectArchiveErrors.importAbandoned
      ]
    },
    schema: {
      operationId: 'importProject',
      tags,
      summary: 'Create a project in the organization from an exported archive',
      description: 'The archive (one `file` part) is checked whole first: its layout, its manifest and every entry\'s SHA-256; ' +
        'a damaged, tampered or foreign archive is refused naming the entry. The project gets a new id (its slug when free), ' +
        'records keep theirs; the project is hidden until the import has written it all, and a failed import leaves none. ' +
        'An app live on the exporting server that cannot be deployed here is named in `deployFailures`; the project stands. ' +
        'An archive over PROJECT_IMPORT_MAX_BYTES, an entry unpacking past PROJECT_IMPORT_MAX_ENTRY_BYTES, ' +
        'or entries together past PROJECT_IMPORT_MAX_UNPACKED_BYTES, is refused with 413. ' +
        '`leftOut` says what to set again here.',
      consumes: ['multipart/form-data'],
      params: OrgParams,
      body: ProjectArchiveMultipart,
      response: ProjectArchiveResponses.imported
    }
  }, async (request, reply) => {
    if (!request.isMultipart()) throw commonErrors.unsupportedMediaType({ send: 'Send the archive as multipart/form-data' })
    if (Number(request.headers['content-length'] ?? 0) > limit + FORM_OVERHEAD) throw projectArchiveErrors.archiveTooLarge({ limit })
    const dir = await mkdtemp(join(tmpdir(), 'plinth-upload-'))
    try {
      const file = join(dir, 'project.tar.gz')
      await pipeline((await formFile(request)).body, capped(limit), createWriteStream(file, { mode: 0o600 }))
      const { orgId } = request.scope.organization
      const { project, manifest, deployFailures } = await app.projectArchives.import(orgId, request.caller.user.userId, file)
      // Projects live at /api/projects/:id, not under the organization's path this action was posted to.
      void reply.code(201).header('location', `/api/projects/${encodeURIComponent(project.id)}`)
      const { counts, leftOut, createdAt: exportedAt, serverVersion } = manifest
      return ok({ project, counts, leftOut, exportedAt, serverVersion, deployFailures })
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })
}
