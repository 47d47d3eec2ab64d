import { createReadStream, createWriteStream } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pipeline } from 'node:stream/promises'
import multipart from '@fastify/multipart'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { ProjectIdParams } from '../../schemas/projects.js'
import { OrgParams } from '../../schemas/organizations.js'
import { PROJECT_ARCHIVE_MAX_BYTES, ProjectArchiveMultipart, ProjectArchiveResponses } from '../../schemas/project-archives.js'
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

/** `POST /api/organizations/:orgId/projects/import`: a new project from an archive, all or nothing. */
export const projectImportRoutes: FastifyPluginAsyncTypebox = async (app) => {
  await app.register(multipart, { limits: { ...FORM_LIMITS, fileSize: PROJECT_ARCHIVE_MAX_BYTES } })

  app.post('/import', {
    config: {
      auth: 'platform',
      parent: 'organization',
      permission: 'project.import',
      errors: [
        commonErrors.unsupportedMediaType, fileErrors.multipartInvalid, fileErrors.fileRequired, fileErrors.multipartTooManyParts,
        projectArchiveErrors.archiveInvalid
      ]
    },
    schema: {
      operationId: 'importProject',
      tags,
      summary: 'Create a project in the organization from an exported archive',
      description: 'The archive (one `file` part) is checked whole first: its layout, its manifest and every entry\'s SHA-256; ' +
        'a damaged, tampered or foreign archive is refused naming the entry. The project gets a new id (its slug when free), ' +
        'records keep theirs; a failed import leaves no project. `leftOut` says what to set again here.',
      consumes: ['multipart/form-data'],
      params: OrgParams,
      body: ProjectArchiveMultipart,
      response: ProjectArchiveResponses.imported
    }
  }, async (request, reply) => {
    if (!request.isMultipart()) throw commonErrors.unsupportedMediaType({ send: 'Send the archive as multipart/form-data' })
    const dir = await mkdtemp(join(tmpdir(), 'plinth-upload-'))
    try {
      const file = join(dir, 'project.tar.gz')
      await pipeline((await formFile(request)).body, createWriteStream(file, { mode: 0o600 }))
      const { project, manifest } = await app.projectArchives.import(request.scope.organization.orgId, request.caller.user.userId, file)
      // Projects live at /api/projects/:id, not under the organization's path this action was posted to.
      void reply.code(201).header('location', `/api/projects/${encodeURIComponent(project.id)}`)
      const { counts, leftOut, createdAt: exportedAt, serverVersion } = manifest
      return ok({ project, counts, leftOut, exportedAt, serverVersion })
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })
}
