import { join } from 'node:path'
import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import { systemClock } from '../services/platform/clock.js'
import { newId } from '../services/platform/ids.js'
import type { FileStore } from '../services/files/file-store.js'
import { GRIDFS_BUCKET, GRIDFS_SWEEP_JOB, GridFsFileStore } from '../services/files/gridfs-file-store.js'
import { MongoChunks } from '../services/files/gridfs-chunks.js'
import { LocalFileStore } from '../services/files/local-file-store.js'
import { DEFAULT_CHUNK_SIZE, DEFAULT_UPLOAD_TTL_SECONDS, UPLOADS_EXPIRE_JOB, UploadSessions } from '../services/files/uploads.js'
import { mongoDatabase } from '../services/store/mongodb.js'
import { ORPHAN_GRACE_MS, RECORD_FILES_SWEEP_JOB, RecordFiles } from '../services/collections/record-files.js'
import { fileSchemas } from '../schemas/files.js'

/** The largest file a field without its own maxSize takes. */
const MAX_FILE_SIZE = 5 * 1024 * 1024 * 1024
/** Single-request (multipart) uploads stay small; larger files go through upload sessions. */
export const MAX_MULTIPART_SIZE = 32 * 1024 * 1024
/** How often GridFS drops what no reader needs any more (retired versions, dead writes, orphaned chunks). */
const GRIDFS_SWEEP_EVERY_MS = 60 * 60_000
/** How often stored files that no record holds are looked for, on either engine. */
const ORPHAN_SWEEP_EVERY_MS = 6 * 60 * 60_000

export interface FileServices {
  store: FileStore
  uploads: UploadSessions
  /** Files held in records' file fields, under each collection's upload, download and fileDelete rules. */
  recordFiles: RecordFiles
  chunkSize: number
}

declare module 'fastify' {
  interface FastifyInstance {
    files: FileServices
  }
}

/**
 * Record files: the FileStore beside the Store (GridFS when the Store is
 * MongoDB, so every API node sees the same bytes; the data directory
 * otherwise), resumable upload sessions and the sweep of abandoned ones.
 */
async function filesPlugin (app: FastifyInstance): Promise<void> {
  const db = mongoDatabase(app.store)
  const gridfs = db === null ? null : new GridFsFileStore(app.store, new MongoChunks(db, GRIDFS_BUCKET), { newId })
  const store: FileStore = gridfs ?? new LocalFileStore(join(app.config.dataDir, 'files'))
  if (gridfs !== null) {
    await gridfs.init()
    app.registerJobHandler(GRIDFS_SWEEP_JOB, async () => await gridfs.sweep())
    app.addHook('onReady', async () => { await app.jobs.schedule(GRIDFS_SWEEP_JOB, GRIDFS_SWEEP_EVERY_MS) })
  }
  const chunkSize = DEFAULT_CHUNK_SIZE
  const uploads = new UploadSessions(app.store, store, { clock: systemClock, newId, chunkSize, ttlSeconds: DEFAULT_UPLOAD_TTL_SECONDS, maxSize: MAX_FILE_SIZE })
  await uploads.init()
  for (const schema of fileSchemas) app.addSchema(schema)
  // One sweep due just after the session could have expired; sweeps are idempotent, so extra ones are harmless.
  const scheduleSweep = async (delayMs: number): Promise<void> => { await app.jobs.enqueue(UPLOADS_EXPIRE_JOB, {}, { delayMs }) }
  const recordFiles = new RecordFiles(app.store, uploads, {
    clock: systemClock,
    findCollection: async (projectId, name) => await app.collections.definitions.find(projectId, name),
    maxSize: MAX_FILE_SIZE,
    sessionStarted: async () => { await scheduleSweep(DEFAULT_UPLOAD_TTL_SECONDS * 1000 + 60_000) },
    writes: app.collections.writes
  })

  app.registerJobHandler(UPLOADS_EXPIRE_JOB, async () => await uploads.expireDue())
  app.records.onRemove(async (projectId, collection, docs) => { await recordFiles.removeRecordFiles(projectId, collection, docs) })
  app.records.onUpdate(async (projectId, collection, _ids, changes, before) => { await recordFiles.removeClearedFiles(projectId, collection, changes, before) })
  app.registerJobHandler(RECORD_FILES_SWEEP_JOB, async () => await recordFiles.sweepOrphans(new Date(systemClock.nowMs() - ORPHAN_GRACE_MS)))
  app.collections.definitions.onDrop(async (projectId, name) => { await recordFiles.dropCollectionFiles(projectId, name) })
  app.projects.onDelete(async (projectId) => { await store.deletePrefix(`files/${projectId}`) })
  app.addHook('onReady', async () => {
    await scheduleSweep(0)
    await app.jobs.schedule(RECORD_FILES_SWEEP_JOB, ORPHAN_SWEEP_EVERY_MS)
  })
  app.decorate('files', { store, uploads, recordFiles, chunkSize })
}

export default fp(filesPlugin, { name: 'plinth-files', fastify: '5.x', dependencies: ['plinth-config', 'plinth-store', 'plinth-jobs', 'plinth-projects', 'plinth-collections', 'plinth-records'] })
