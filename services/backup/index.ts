import { AddressGuard, type ResolveAll } from '../outbound/internal-addresses.js'
import type { Cursors } from '../collections/query.js'
import type { Clock } from '../platform/clock.js'
import type { IdGenerator } from '../platform/ids.js'
import type { Store } from '../store/types.js'
import type { BackupSources } from './backup.js'
import { Backups } from './backups.js'
import type { BackupConfig } from './config.js'
import { putBackup } from './s3.js'

export { Backups }
export { BACKUP_JOB, BACKUP_SCHEDULED_JOB } from './backups.js'

export interface BackupPorts {
  store: Store
  clock: Clock
  /** The Store's time, for the backups' leases. */
  storeClock: Clock
  newId: IdGenerator
  cursors: Cursors
  config: BackupConfig
  /** DATA_DIR and the git and hosting directories, and the store's engine. */
  sources: Omit<BackupSources, 'exclude'>
  enqueue: (type: string, payload: { backupId: string }) => Promise<unknown>
  /** Tests resolve names their own way. */
  resolveAll?: ResolveAll
}

/** The backups service, with its S3 upload through the one address guard when BACKUP_S3_ENDPOINT is set. */
export async function buildBackups (ports: BackupPorts): Promise<Backups> {
  const { config } = ports
  const s3 = config.s3
  const guard = s3 === null ? null : new AddressGuard({ allowedHosts: s3.allowedHosts, ...(ports.resolveAll === undefined ? {} : { resolveAll: ports.resolveAll }) })
  const backups = new Backups({
    store: ports.store,
    clock: ports.clock,
    storeClock: ports.storeClock,
    newId: ports.newId,
    cursors: ports.cursors,
    sources: { ...ports.sources, exclude: [config.dir] },
    dir: config.dir,
    keep: config.keep,
    enqueue: ports.enqueue,
    upload: s3 === null || guard === null ? null : async (file, name, size, sha256) => await putBackup(s3, guard, file, name, size, sha256, ports.clock.now())
  })
  await backups.init()
  return backups
}
