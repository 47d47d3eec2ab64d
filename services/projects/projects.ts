import { commonErrors } from '../platform/errors.js'
import { projectErrors } from './errors.js'
import { ANY_ORIGIN, normalizeOrigin } from '../platform/origins.js'
import { checkName, checkSlug, namedChanges, slugFrom, withSuffix } from '../platform/slugs.js'
import { DuplicateKeyError } from '../store/errors.js'
import type { Clock } from '../platform/clock.js'
import { leaseUntil } from '../platform/lease.js'
import type { SharedReads, Store, StoreCollection, WithId } from '../store/types.js'
import { projectCollectionPrefix } from './naming.js'
import { isoString } from '../platform/iso-dates.js'
import { FrozenMemo } from '../cache/frozen-memo.js'
import type { ProjectT } from '../../schemas/projects.ts'

type ProjectRecord = {
  orgId: string
  name: string
  slug: string
  description: string
  authEnabled: boolean
  allowedOrigins: string[]
  createdBy: string
  createdAt: Date
  updatedAt: Date
  deletedAt: Date | null
  /** Set while an import writes the project: hidden from every read until `finishImport` clears it in one write. */
  importing?: true
  /** While `importing`: the import renews this as it works; once it has passed, the import is taken for dead and its project swept. */
  importLeaseUntil?: Date
}

export type Project = ProjectT

/** Run when a project goes: each family that keeps data outside the project's own collections registers one. */
export type ProjectCleanup = (projectId: string) => Promise<void>
/** Run each time end-user auth is switched on: whatever end users need is prepared (idempotently). */
export type AuthEnabledHook = (projectId: string) => Promise<void>

const MAX_ALLOWED_ORIGINS = 50

/** How long an import's hidden project outlives the import's last renewal (it renews every quarter of this). */
export const IMPORT_LEASE_MS = 2 * 60_000
/** The recurring job that removes the hidden projects of imports that died (a crash, a kill) with what they wrote. */
export const IMPORT_SWEEP_JOB = 'project.import-sweep'
export const IMPORT_SWEEP_EVERY_MS = 5 * 60_000

/** Each entry an origin (`https://app.example.com`, stored as browsers send it) or `*` alone; duplicates dropped. */
function checkAllowedOrigins (entries: string[]): string[] {
  if (entries.length > MAX_ALLOWED_ORIGINS) throw projectErrors.invalidOrigin({ why: `allowedOrigins holds at most ${MAX_ALLOWED_ORIGINS} entries` })
  const origins = new Set<string>()
  for (const entry of entries) {
    const origin = entry.trim() === ANY_ORIGIN ? ANY_ORIGIN : normalizeOrigin(entry)
    if (origin === null) throw projectErrors.invalidOrigin({ why: `"${entry}" is not an origin such as https://app.example.com`, entry })
    origins.add(origin)
  }
  if (origins.has(ANY_ORIGIN) && origins.size > 1) throw projectErrors.invalidOrigin({ why: 'allowedOrigins is either ["*"] or a list of origins, not both' })
  return [...origins]
}

function toProject (record: WithId<ProjectRecord>): Project {
  return {
    id: record._id,
    orgId: record.orgId,
    name: record.name,
    slug: record.slug,
    description: record.description,
    authEnabled: record.authEnabled,
    allowedOrigins: record.allowedOrigins,
    createdBy: record.createdBy,
    createdAt: isoString(record.createdAt),
    updatedAt: isoString(record.updatedAt)
  }
}

const PROJECTS_COLLECTION = 'projects'
// Every authenticated data request looks its project up: the view is made once per stored project record.
const projectOf = new FrozenMemo(toProject)

export class Projects {
  private readonly records: StoreCollection<ProjectRecord>
  private readonly shared: SharedReads<ProjectRecord>
  private readonly cleanups: ProjectCleanup[] = []
  private readonly authEnabledHooks: AuthEnabledHook[] = []

  /** `storeClock`: the Store's time, which the import leases are read in, so every process judges a lapse alike. */
  constructor (private readonly store: Store, private readonly deps: { clock: Clock, storeClock: Clock, schedulePurge: (projectId: string) => Promise<void> }) {
    this.records = store.collection<ProjectRecord>(PROJECTS_COLLECTION)
    this.shared = store.extensions.shared<ProjectRecord>(PROJECTS_COLLECTION)
  }

  async init (): Promise<void> {
    await this.records.createIndex({ orgId: 1, slug: 1 }, { unique: true })
  }

  onDelete (cleanup: ProjectCleanup): void {
    this.cleanups.push(cleanup)
  }

  onAuthEnabled (hook: AuthEnabledHook): void {
    this.authEnabledHooks.push(hook)
  }

  async create (orgId: string, userId: string, input: { name: string, slug?: string, description?: string }, options: { importing?: boolean } = {}): Promise<Project> {
    const name = checkName(input.name)
    if (input.slug !== undefined) checkSlug(input.slug)
    const now = this.deps.clock.now()
    // A slug derived from the name gets a random suffix when it is empty or taken; one the caller chose is refused instead.
    for (let attempt = 0; ; attempt++) {
      const slug = input.slug ?? withSuffix(slugFrom(name), attempt, 'project')
      const fields = { orgId, name, slug, description: input.description?.trim() ?? '', authEnabled: false, allowedOrigins: [], createdBy: userId, createdAt: now, updatedAt: now, deletedAt: null }
      const record: ProjectRecord = options.importing === true ? { ...fields, importing: true, importLeaseUntil: leaseUntil(this.deps.storeClock, IMPORT_LEASE_MS) } : fields
      try {
        const { insertedId } = await this.records.insertOne(record)
        return toProject({ ...record, _id: insertedId })
      } catch (error) {
        if (!(error instanceof DuplicateKeyError)) throw error
        if (input.slug !== undefined || attempt >= 4) throw commonErrors.slugTaken({ what: 'A project', slug, within: 'this organization' })
      }
    }
  }

  /** A live project; shared and frozen. */
  async findById (projectId: string): Promise<Project | null> {
    // By primary key alone (the Store's fastest read); the deletion mark is checked here.
    const record = await this.shared.findOne({ _id: projectId })
    return record === null || record.deletedAt !== null || record.importing === true ? null : projectOf.get(record)
  }

  /** The import's one switch: the project appears whole, in one conditional write (refused once the sweep has taken it). */
  /** Reveals an imported project; false when the sweep took it first (its import stalled past the lease). */
  async finishImport (projectId: string): Promise<boolean> {
    const { matchedCount } = await this.records.updateOne({ _id: projectId, deletedAt: null, importing: true }, { $unset: { importing: '', importLeaseUntil: '' }, $set: { updatedAt: this.deps.clock.now() } })
    return matchedCount === 1
  }

  /** An import still at work keeps its hidden project; false when the sweep already took it. */
  async renewImport (projectId: string): Promise<boolean> {
    const { matchedCount } = await this.records.updateOne({ _id: projectId, deletedAt: null, importing: true }, { $set: { importLeaseUntil: leaseUntil(this.deps.storeClock, IMPORT_LEASE_MS) } })
    return matchedCount === 1
  }

  /**
   * Deletes, with everything written for them, the hidden projects whose
   * import stopped renewing its lease (its process died mid-import), as
   * `delete` does; the mark is conditional on the lease still being out, so
   * an import that renewed meanwhile keeps its project. The number swept.
   */
  async sweepAbandonedImports (): Promise<number> {
    const now = this.deps.clock.now()
    // A hidden project from before leases were recorded: its age stands for the lease.
    const abandoned = {
      deletedAt: null,
      importing: true,
      $or: [{ importLeaseUntil: { $lt: this.deps.storeClock.now() } }, { importLeaseUntil: { $exists: false }, createdAt: { $lt: new Date(now.getTime() - IMPORT_LEASE_MS) } }]
    }
    let swept = 0
    for (const { _id } of await this.records.find(abandoned, { projection: { _id: 1 } }).toArray()) {
      await this.deps.schedulePurge(_id)
      const marked = await this.records.updateOne({ $and: [{ _id }, abandoned] }, { $set: { deletedAt: now } })
      if (marked.matchedCount === 0) continue
      await this.purge(_id)
      swept++
    }
    return swept
  }

  async get (projectId: string): Promise<Project> {
    const project = await this.findById(projectId)
    if (project === null) throw commonErrors.projectNotFound()
    return project
  }

  async listInOrganizations (orgIds: string[]): Promise<Project[]> {
    if (orgIds.length === 0) return []
    const records = await this.records.find({ orgId: { $in: orgIds }, deletedAt: null, importing: { $exists: false } }, { sort: { name: 1, _id: 1 } }).toArray()
    return records.map(toProject)
  }

  async update (projectId: string, input: { name?: string, slug?: string, description?: string, allowedOrigins?: string[] }): Promise<Project> {
    const changes: Partial<ProjectRecord> = { ...namedChanges(input), updatedAt: this.deps.clock.now() }
    if (input.allowedOrigins !== undefined) changes.allowedOrigins = checkAllowedOrigins(input.allowedOrigins)
    try {
      const updated = await this.records.findOneAndUpdate({ _id: projectId, deletedAt: null }, { $set: changes }, { returnDocument: 'after' })
      if (updated === null) throw commonErrors.projectNotFound()
      return toProject(updated)
    } catch (error) {
      if (error instanceof DuplicateKeyError) throw commonErrors.slugTaken({ what: 'A project', slug: input.slug ?? '', within: 'this organization' })
      throw error
    }
  }

  /**
   * Switching on prepares the `_users` collection (idempotently); switching
   * off keeps every end user. Without `enabled` the state flips, decided by a
   * conditional write so two concurrent flips cannot both land on one state.
   */
  async setAuth (projectId: string, enabled?: boolean): Promise<Project> {
    for (;;) {
      const current = await this.records.findOne({ _id: projectId, deletedAt: null })
      if (current === null) throw commonErrors.projectNotFound()
      const wanted = enabled ?? !current.authEnabled
      const updated = await this.records.findOneAndUpdate(
        { _id: projectId, deletedAt: null, authEnabled: current.authEnabled },
        { $set: { authEnabled: wanted, updatedAt: this.deps.clock.now() } },
        { returnDocument: 'after' }
      )
      if (updated === null) continue
      // Only for a live project, so a deleted one is never given its collection back.
      if (wanted) for (const hook of this.authEnabledHooks) await hook(projectId)
      return toProject(updated)
    }
  }

  /**
   * Marked first so it disappears at once, then purged. A purge job is queued
   * before anything is touched, so a crash mid-way is finished by any node.
   */
  async delete (projectId: string): Promise<void> {
    await this.deps.schedulePurge(projectId)
    const marked = await this.records.updateOne({ _id: projectId, deletedAt: null }, { $set: { deletedAt: this.deps.clock.now() } })
    if (marked.matchedCount === 0) throw commonErrors.projectNotFound()
    await this.purge(projectId)
  }

  /** Idempotent; sweeps the project's collections even when its record is already gone, catching writes that raced the deletion. */
  async purge (projectId: string): Promise<void> {
    const record = await this.records.findOne({ _id: projectId })
    if (record !== null && record.deletedAt === null) return
    for (const cleanup of this.cleanups) await cleanup(projectId)
    const prefix = projectCollectionPrefix(projectId)
    for (const name of await this.store.listCollections()) {
      // A page per write: a purge cut short (a crash, a kill) is finished by its job.
      if (name.startsWith(prefix)) await this.store.extensions.sweep(name).drop()
    }
    await this.records.deleteOne({ _id: projectId })
  }

  /** Of `projectIds`, those that are not live projects of the organization. */
  async unknownIn (orgId: string, projectIds: string[]): Promise<string[]> {
    if (projectIds.length === 0) return []
    const found = await this.records.find({ _id: { $in: projectIds }, orgId, deletedAt: null, importing: { $exists: false } }, { projection: { _id: 1 } }).toArray()
    const known = new Set(found.map((record) => record._id))
    return projectIds.filter((id) => !known.has(id))
  }

  async deleteAllInOrganization (orgId: string): Promise<void> {
    await this.records.updateMany({ orgId, deletedAt: null }, { $set: { deletedAt: this.deps.clock.now() } })
    for (const record of await this.records.find({ orgId }, { projection: { _id: 1 } }).toArray()) await this.purge(record._id)
  }
}
