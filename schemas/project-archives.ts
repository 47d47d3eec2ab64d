import { Type, type Static } from '@sinclair/typebox'
import { GzipArchive } from './common.js'
import { Created } from './envelope.js'
import { Project } from './projects.js'

export const ArchiveCounts = Type.Object({
  collections: Type.Integer({ description: 'Collections, `_users` not counted' }),
  records: Type.Integer({ description: 'Records of those collections' }),
  endUsers: Type.Integer({ description: 'End users (`_users` records), with their password hashes' }),
  files: Type.Integer(),
  repositories: Type.Integer(),
  apps: Type.Optional(Type.Integer({ description: 'Hosting apps, container and static (absent from archives written before apps travelled)' }))
})

export const ProjectImported = Type.Object({
  project: Type.Ref(Project),
  counts: ArchiveCounts,
  leftOut: Type.Array(Type.String(), { description: 'What the archive does not carry (secrets, tokens, other families\' settings): set it again on this server' }),
  exportedAt: Type.String({ description: 'When the archive was written' }),
  serverVersion: Type.String({ description: 'The version of the server that wrote it' }),
  deployFailures: Type.Array(Type.Object({
    app: Type.String({ description: 'The app\'s name on this server' }),
    code: Type.String({ description: 'The error code its deployment was refused with' }),
    message: Type.String()
  }), { description: 'Apps live on the exporting server whose deployment could not be asked for here: created, not deployed (their timeline says why); deploy them again. The project was imported all the same' })
})
export type ProjectImportedT = Static<typeof ProjectImported>

export const ProjectArchiveMultipart = {
  content: {
    'multipart/form-data': {
      schema: Type.Unsafe<undefined>({
        properties: { file: { 'x-binary': true, description: 'The archive written by exportProject (`.tar.gz`)' } },
        required: ['file'],
        'x-form': true
      })
    }
  }
}

export const ProjectArchiveResponses = {
  exported: GzipArchive('The archive, a gzip-compressed tar with manifest.json last (docs/export.md)', 'with a file name made of the project\'s slug and the date'),
  imported: { 201: Created(ProjectImported) }
}
