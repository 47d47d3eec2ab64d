import { errorCatalogue } from '../platform/errors.js'

export const backupErrors = errorCatalogue('backup', {
  archiveInvalid: {
    code: 'APP_BACKUP_ARCHIVE_INVALID',
    status: 400,
    message: ({ why }: { why: string }) => `The archive cannot be restored: ${why}`,
    description: 'the archive is not a Plinth backup, is damaged, a file in it does not match its manifest\'s checksum, or its roots or engine are not this server\'s'
  },
  archiveNotFound: {
    code: 'APP_BACKUP_ARCHIVE_NOT_FOUND',
    status: 404,
    message: ({ file }: { file: string }) => `The archive ${file} does not exist`,
    description: 'no file at the path given'
  },
  backupNotFound: {
    code: 'APP_BACKUP_NOT_FOUND',
    status: 404,
    message: 'Backup not found',
    description: 'no backup has this id'
  },
  backupNotReady: {
    code: 'APP_BACKUP_NOT_READY',
    status: 409,
    message: ({ status }: { status: string }) => `The backup is ${status}: only a ready backup has an archive to download`,
    description: 'the backup is still queued or running, or failed'
  },
  targetNotEmpty: {
    code: 'APP_RESTORE_TARGET_NOT_EMPTY',
    status: 409,
    message: ({ variable, dir }: { variable: string, dir: string }) => `${variable} (${dir}) is not empty: a backup is restored only into an empty directory`,
    description: 'the directory a restore would write into already holds something'
  }
})

/** The per-project archive's refusals (project-import.ts). */
export const projectArchiveErrors = errorCatalogue('projectArchive', {
  archiveInvalid: {
    code: 'APP_PROJECT_ARCHIVE_INVALID',
    status: 400,
    message: ({ why }: { why: string }) => `The archive cannot be imported: ${why}`,
    description: 'the upload is not a Plinth project archive, is damaged, holds an entry a project export never writes (a link, ' +
      'a path outside the layout), an entry that does not match its manifest\'s checksum, or a definition this server refuses'
  },
  entryTooLarge: {
    code: 'APP_PROJECT_ARCHIVE_ENTRY_TOO_LARGE',
    status: 413,
    message: ({ path, size, limit }: { path: string, size: number, limit: number }) =>
      `The archive cannot be imported: ${path} unpacks to ${size} bytes, more than the ${limit} one entry may hold (PROJECT_IMPORT_MAX_ENTRY_BYTES)`,
    details: ({ limit }) => ({ limit }),
    description: 'an entry of the archive unpacks to more than `details.limit` bytes (a compressed archive that would inflate past what this server takes); nothing was written'
  },
  unpacksTooLarge: {
    code: 'APP_PROJECT_ARCHIVE_UNPACKS_TOO_LARGE',
    status: 413,
    message: ({ limit }: { limit: number }) =>
      `The archive cannot be imported: its entries together unpack to more than the ${limit} bytes an import takes (PROJECT_IMPORT_MAX_UNPACKED_BYTES)`,
    details: ({ limit }) => ({ limit }),
    description: 'the archive\'s entries together unpack to more than `details.limit` bytes (many entries each under the per-entry limit); nothing was written'
  },
  importAbandoned: {
    code: 'APP_PROJECT_IMPORT_ABANDONED',
    status: 503,
    message: 'The import stalled past its lease and the sweep of abandoned imports removed its project; nothing was kept. Import the archive again',
    description: 'the import could not renew its lease in time (the server stalled or lost the store for minutes) and stopped; nothing was written'
  },
  archiveTooLarge: {
    code: 'APP_PROJECT_ARCHIVE_TOO_LARGE',
    status: 413,
    message: ({ limit }: { limit: number }) => `The archive is larger than the ${limit} bytes an import takes (PROJECT_IMPORT_MAX_BYTES)`,
    details: ({ limit }) => ({ limit }),
    description: 'the uploaded archive is larger than `details.limit` bytes'
  }
})
