import { loadConfig } from './services/config.js'
import { writeBackup } from './services/backup/backup.js'
import { restoreBackup } from './services/backup/restore.js'
import { AppError } from './services/platform/errors.js'

/**
 * `npm run backup -- <file> [--include-keys]` and `npm run restore -- <file>`
 * (`node dist/backup-cli.js backup|restore …` in a built install), on the
 * directories the server's environment names (docs/operations.md, "Backups").
 */
const [command, ...args] = process.argv.slice(2)
const file = args.find((arg) => !arg.startsWith('--'))
const usage = 'usage: backup <file> [--include-keys] | restore <file>'
if (file === undefined || (command !== 'backup' && command !== 'restore')) {
  console.error(usage)
  process.exit(64)
}
const config = loadConfig()
const sources = { dataDir: config.dataDir, reposDir: config.git.reposDir, hostingDir: config.hosting.dir, engine: config.mongodbUrl === null ? 'sqlite' as const : 'mongodb' as const, exclude: [config.backup.dir] }
try {
  if (command === 'backup') {
    const manifest = await writeBackup(sources, file, { includeKeys: args.includes('--include-keys') })
    console.log(`backup written to ${file}: ${manifest.files.length} files${manifest.includesKeys ? ', keys included' : ', keys left out'}`)
    if (manifest.engine === 'mongodb') console.log('the store is on MongoDB and is not in this archive: back it up with mongodump or the provider\'s snapshots')
  } else {
    const manifest = await restoreBackup(sources, file)
    console.log(`restored ${manifest.files.length} files from the backup of ${manifest.createdAt} into ${config.dataDir}`)
    if (!manifest.includesKeys) console.log('the archive holds no master key: start the server with the original PLINTH_MASTER_KEY or master.key, or sealed secrets cannot be opened')
  }
} catch (error) {
  console.error(error instanceof AppError ? error.message : error)
  process.exit(1)
}
