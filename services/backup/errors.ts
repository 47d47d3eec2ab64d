import { errorCatalogue } from '../platform/errors.js'

export const backupErrors = errorCatalogue('backup', {
  archiveInvalid: {
    code: 'APP_BACKUP_ARCHIVE_INVALID',
    status: 400,
    message: ({ why }: { why: string }) => `The archive cannot be restored: ${why}`,
    description: 'the archive is not a Plinth backup, is damaged, a file in it does not match its manifest\'s checksum, or its roots or engine are not this server\'s'
  },
  targetNotEmpty: {
    code: 'APP_RESTORE_TARGET_NOT_EMPTY',
    status: 409,
    message: ({ variable, dir }: { variable: string, dir: string }) => `${variable} (${dir}) is not empty: a backup is restored only into an empty directory`,
    description: 'the directory a restore would write into already holds something'
  }
})
