import { createHash } from 'node:crypto'
import { createReadStream } from 'node:fs'
import { mkdir, rm, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { pipeline } from 'node:stream/promises'
import type { Readable } from 'node:stream'
import { cursorScope, orderRange, type Cursors, type SortPlan } from '../collections/query.js'
import type { Clock } from '../platform/clock.js'
import { holdLease, leaseUntil } from '../platform/lease.js'
import { DeferJobError } from '../jobs/job.js'
import { AppError } from '../platform/errors.js'
import type { IdGenerator } from '../platform/ids.js'
import { isoString, isoStringOrNull } from '../platform/iso-dates.js'
import type { Store, StoreCollection, WithId } from '../store/types.js'
import { BACKUP_LIMITS, type BackupListQueryT, type BackupStatusT, type BackupT } from '../../schemas/backups.js'
import { writeBackup, type BackupSources } from './backup.js'
import { backupErrors } from './errors.js'
import { verifyBackup } from './restore.js'

export const BACKUP_JOB = 'backup.create'
export const BACKUP_SCHEDULED_JOB = 'backup.scheduled'
export const BACKUPS_COLLECTION = 'platform_backups'

type BackupRecord = WithId<{
  status: BackupStatusT
  origin: 'api' | 'schedule'
  requestedBy: string | null
  createdAt: Date
  startedAt: Date | null
  finishedAt: Date | null
  size: number | null
  sha256: string | null
  files: number | null
  error: string | null
  upload: { status: 'uploaded' | 'failed', key: string, error: string | null } | null
  /** While queued or running: renewed by the run as it works; once past, the run is taken for dead (absent on records from before leases). */
  leaseUntil?: Date | null
  /** The run holding the lease: its renewals and outcome are fenced on it, so a run that lost the backup cannot write over its successor's. */
  runId?: string
}>

export interface BackupsDeps {
  store: Store
  clock: Clock
  /** The Store's time, which the leases are read in, so every process judges a lapse alike. */
  storeClock: Clock
  newId: IdGenerator
  cursors: Cursors
  /** What is backed up; BACKUP_DIR among `exclude`. */
  sources: BackupSources
  /** BACKUP_DIR. */
  dir: string
  /** BACKUP_KEEP: scheduled backups kept. */
  keep: number
  enqueue: (type: string, payload: { backupId: string }) => Promise<unknown>
  /** Puts a ready archive in S3-compatible storage (BACKUP_S3_*), when configured: the object's key. */
  upload: ((file: string, name: string, size: number, sha256: string) => Promise<{ key: string }>) | null
}

/** How long a backup outlives its run's last renewal (every quarter of this): a live run, however long, keeps renewing. */
export const BACKUP_LEASE_MS = 2 * 60_000

const NEWEST_FIRST: SortPlan = { keys: [['_id', -1]], sort: { _id: -1 }, spec: '-_id' }
const archiveName = (id: string): string => `plinth-backup-${id}.tar.gz`

async function sha256Of (file: string): Promise<string> {
  const hash = createHash('sha256')
  await pipeline(createReadStream(file), hash)
  return hash.digest('hex')
}

/**
 * Backups of the deployment, made by a job on the long lane: the archive is
 * written under BACKUP_DIR (a snapshot of the store taken without stopping
 * writes, then DATA_DIR's files, the repositories and the hosting
 * artifacts; keys left out), read back through the restore's checks, and
 * only then marked ready, with its size and SHA-256. Records are kept in the
 * store, so any node answers for them; the archives are files, so BACKUP_DIR
 * is shared by the nodes as GIT_REPOS_DIR is.
 */
export class Backups {
  readonly records: StoreCollection<BackupRecord>

  constructor (private readonly deps: BackupsDeps) {
    this.records = deps.store.collection<BackupRecord>(BACKUPS_COLLECTION)
  }

  async init (): Promise<void> {
    await this.records.createIndex({ origin: 1, status: 1 })
  }

  /** Queues a backup; the job writes it. */
  async create (requestedBy: string): Promise<BackupT> {
    const record = await this.insert('api', requestedBy)
    try {
      await this.deps.enqueue(BACKUP_JOB, { backupId: record._id })
    } catch (error) {
      // No job will ever write it: a backup listed as queued forever would only mislead.
      await this.records.deleteOne({ _id: record._id })
      throw error
    }
    return await this.view(record)
  }

  async list (page: BackupListQueryT): Promise<{ items: BackupT[], nextCursor: string | null }> {
    const scope = cursorScope('platform', 'backups', {}, NEWEST_FIRST)
    const limit = page.limit ?? BACKUP_LIMITS.pageDefault
    const after = page.cursor === undefined ? null : this.deps.cursors.decode(page.cursor, NEWEST_FIRST, scope)
    const found = await this.records.find(orderRange(NEWEST_FIRST.keys, after, null), { sort: NEWEST_FIRST.sort, limit: limit + 1 }).toArray()
    const docs = found.slice(0, limit)
    return {
      items: await Promise.all(docs.map(async (record) => await this.view(record))),
      nextCursor: found.length > limit ? this.deps.cursors.encode(docs[docs.length - 1], scope) : null
    }
  }

  async get (id: string): Promise<BackupT> {
    return await this.view(await this.find(id))
  }

  /** A ready backup's archive, to stream. */
  async open (id: string): Promise<{ body: Readable, size: number, filename: string }> {
    const record = await this.find(id)
    if (record.status !== 'ready') throw backupErrors.backupNotReady({ status: record.status })
    const file = this.file(id)
    const size = await stat(file).then((stats) => stats.size, () => null)
    if (size === null) throw backupErrors.backupNotReady({ status: 'missing its archive in BACKUP_DIR' })
    return { body: createReadStream(file, { start: 0, end: Math.max(0, size - 1) }), size, filename: archiveName(id) }
  }

  /** The backup and its archive in BACKUP_DIR (a copy put in S3 stays there: the bucket's own lifecycle decides). */
  async delete (id: string): Promise<void> {
    await this.find(id)
    await this.records.deleteOne({ _id: id })
    await rm(this.file(id), { force: true })
  }

  /**
   * The job: writes, verifies and, when configured, uploads the archive, or
   * records why not. A running backup is taken over only once its lease has
   * run out (its run died); while it holds, the job waits for it. `signal`
   * is the job's lease: lost (the job now another worker's), the run stops
   * writing and marks the backup failed, as it does when its own lease is
   * no longer its.
   */
  async run (id: string, jobSignal?: AbortSignal): Promise<{ status: BackupStatusT }> {
    const runId = this.deps.newId()
    const takeable = { _id: id, $or: [{ status: 'queued' }, { status: 'running', leaseUntil: { $lt: this.deps.storeClock.now() } }, { status: 'running', leaseUntil: { $exists: false } }] }
    const record = await this.records.findOneAndUpdate(takeable, { $set: { status: 'running', startedAt: this.deps.clock.now(), leaseUntil: this.leaseEnd(), runId } }, { returnDocument: 'after' })
    if (record === null) {
      const held = await this.records.findOne({ _id: id, status: 'running' })
      if (held?.leaseUntil != null) throw new DeferJobError(`Backup ${id} is being written by another run`, Math.max(0, held.leaseUntil.getTime() - this.deps.storeClock.nowMs()) + 1)
      return { status: 'failed' }
    }
    const file = this.file(id)
    const mine = { _id: id, status: 'running', runId }
    let changes: Partial<BackupRecord>
    const lease = holdLease(async () => (await this.records.updateOne(mine, { $set: { leaseUntil: this.leaseEnd() } })).matchedCount === 1, BACKUP_LEASE_MS / 4, () => new Error('Abandoned: the backup was taken from this run'))
    const signal = jobSignal === undefined ? lease.signal : AbortSignal.any([jobSignal, lease.signal])
    try {
      await mkdir(this.deps.dir, { recursive: true, mode: 0o700 })
      // A run cut short by a crash may have left the archive whole: written again, from a new snapshot.
      await rm(file, { force: true })
      await writeBackup(this.deps.sources, file, { now: record.createdAt, signal })
      signal.throwIfAborted()
      const manifest = await verifyBackup(this.deps.sources, file)
      const size = (await stat(file)).size
      const sha256 = await sha256Of(file)
      changes = { status: 'ready', size, sha256, files: manifest.files.length, upload: await this.upload(file, id, size, sha256) }
    } catch (error) {
      await rm(file, { force: true })
      const why = signal.aborted ? 'Abandoned: the job running it lost its lease (another worker took it over), so it stopped writing' : (error as Error).message
      changes = { status: 'failed', error: error instanceof AppError ? error.message : signal.aborted ? why : `The backup failed: ${why}` }
    } finally {
      lease.stop()
    }
    const { matchedCount } = await this.records.updateOne(mine, { $set: { ...changes, finishedAt: this.deps.clock.now(), leaseUntil: null } })
    // Deleted while it ran: nothing may keep its archive.
    if (matchedCount === 0) await rm(file, { force: true })
    return { status: changes.status as BackupStatusT }
  }

  /** The scheduled job: one backup now, then the scheduled ones beyond BACKUP_KEEP deleted, oldest first. */
  async runScheduled (): Promise<{ status: BackupStatusT, pruned: number, interrupted: number }> {
    const interrupted = await this.failInterrupted()
    const record = await this.insert('schedule', null)
    const { status } = await this.run(record._id)
    if (status !== 'ready') return { status, pruned: 0, interrupted }
    const old = await this.records.find({ origin: 'schedule', status: 'ready' }, { sort: { _id: -1 }, skip: this.deps.keep }).toArray()
    for (const backup of old) await this.delete(backup._id)
    return { status, pruned: old.length, interrupted }
  }

  /**
   * A scheduled backup still queued or running when the next scheduled run
   * starts was cut short (its process died): the recurring job runs once at a
   * time for the deployment and makes a new backup each time, so nothing will
   * finish the old one. Marked failed, saying why, and its partial archive
   * removed. Only one whose lease has run out: a run that is alive (the job
   * taken up again while its first run still works, a second node) renews
   * it, and is left to finish. Backups asked for through the API are left
   * alone: their own job is retried by the queue, which takes the same
   * backup up again.
   */
  private async failInterrupted (): Promise<number> {
    const stale = {
      origin: 'schedule',
      status: { $in: ['queued', 'running'] },
      $or: [{ leaseUntil: { $lt: this.deps.storeClock.now() } }, { leaseUntil: { $exists: false } }]
    }
    let failed = 0
    for (const { _id } of await this.records.find(stale, { projection: { _id: 1 } }).toArray()) {
      const { matchedCount } = await this.records.updateOne({ $and: [{ _id }, stale] }, {
        $set: { status: 'failed', error: 'Interrupted: the process running it stopped before it finished; the next scheduled backup took over', finishedAt: this.deps.clock.now() }
      })
      if (matchedCount === 0) continue
      await rm(this.file(_id), { force: true })
      failed += matchedCount
    }
    return failed
  }

  private async upload (file: string, id: string, size: number, sha256: string): Promise<BackupRecord['upload']> {
    if (this.deps.upload === null) return null
    const name = archiveName(id)
    try {
      return { status: 'uploaded', error: null, ...await this.deps.upload(file, name, size, sha256) }
    } catch (error) {
      // The archive is whole on disk: the backup is ready, and says its copy is not.
      return { status: 'failed', key: name, error: (error as Error).message }
    }
  }

  private async insert (origin: BackupRecord['origin'], requestedBy: string | null): Promise<BackupRecord> {
    const record: BackupRecord = {
      _id: this.deps.newId(),
      status: 'queued',
      origin,
      requestedBy,
      createdAt: this.deps.clock.now(),
      startedAt: null,
      finishedAt: null,
      size: null,
      sha256: null,
      files: null,
      error: null,
      upload: null,
      // Held from the start: a scheduled backup between its insert and its run is not taken for dead.
      leaseUntil: this.leaseEnd()
    }
    await this.records.insertOne(record)
    return record
  }

  private leaseEnd (): Date {
    return leaseUntil(this.deps.storeClock, BACKUP_LEASE_MS)
  }

  private async find (id: string): Promise<BackupRecord> {
    const record = await this.records.findOne({ _id: id })
    if (record === null) throw backupErrors.backupNotFound()
    return record
  }

  private file (id: string): string {
    return join(this.deps.dir, archiveName(id))
  }

  private async view (record: BackupRecord): Promise<BackupT> {
    let checksum: BackupT['checksum'] = null
    if (record.status === 'ready') {
      const size = await stat(this.file(record._id)).then((stats) => stats.size, () => null)
      checksum = size === null ? 'missing' : size === record.size ? 'verified' : 'changed'
    }
    return {
      id: record._id,
      status: record.status,
      origin: record.origin,
      requestedBy: record.requestedBy,
      createdAt: isoString(record.createdAt),
      finishedAt: isoStringOrNull(record.finishedAt),
      size: record.size,
      sha256: record.sha256,
      files: record.files,
      engine: this.deps.sources.engine,
      checksum,
      error: record.error,
      upload: record.upload
    }
  }
}
