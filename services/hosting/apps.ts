import type { Clock } from '../platform/clock.js'
import { hostingErrors } from './errors.js'
import type { IdGenerator } from '../platform/ids.js'
import { DuplicateKeyError } from '../store/errors.js'
import type { Store, StoreCollection } from '../store/types.js'
import { isoString } from '../platform/iso-dates.js'
import { HOSTING_LIMITS, type AppT, type CreateAppBodyT, type GitSourceT, type InstanceT, type StaticAppT } from '../../schemas/hosting.js'
import { APPS, type AppKind, type AppRecord, type GitSourceRecord, type InstanceRecord } from './records.js'
import { deploymentView, type Deployments } from './deployments.js'
import type { Releases } from './releases.js'
import type { Timeline } from './timeline.js'

export interface AppsDeps {
  clock: Clock
  newId: IdGenerator
  deployments: Deployments
  releases: Releases
  timeline: Timeline
  /** Apps answer at `<name>.<appsDomain>`. */
  appsDomain: string
  /** The driver's isolation shortfall, shown on every app. */
  degradedReason: string | null
  /** Asks for a reconcile of the app's instances (`enqueueKeyed(RECONCILE_JOB, appId)`). */
  reconcile: (appId: string) => Promise<void>
  /** Everything else the app holds (secrets, logs, uploads, usage, hostnames), removed with it. */
  cleanups: Array<(app: AppRecord) => Promise<void>>
}

/** The job that makes an app's instances match its scaling and suspension. */
export const RECONCILE_JOB = 'hosting.reconcile'

function instanceView (instance: InstanceRecord): InstanceT {
  return {
    id: instance._id,
    deploymentId: instance.deploymentId,
    state: instance.state,
    host: instance.running?.host ?? null,
    port: instance.running?.port ?? null,
    reason: instance.reason,
    startedAt: instance.startedAt === null ? null : isoString(instance.startedAt),
    stoppedAt: instance.stoppedAt === null ? null : isoString(instance.stoppedAt)
  }
}

function gitSourceView (source: GitSourceRecord | null): GitSourceT | null {
  return source === null ? null : { ...source }
}

/**
 * Container apps and static apps of a project: one collection, one name
 * space (a name is a hostname under the apps domain), told apart by `kind`.
 * Scaling and suspension are written here and carried out by the app's
 * reconcile job.
 */
export class HostingApps {
  readonly records: StoreCollection<AppRecord>

  constructor (store: Store, private readonly deps: AppsDeps) {
    this.records = store.collection<AppRecord>(APPS)
  }

  async init (): Promise<void> {
    await this.records.createIndex({ name: 1 }, { unique: true })
    await this.records.createIndex({ projectId: 1, kind: 1, name: 1 })
  }

  hostname (app: AppRecord): string {
    return `${app.name}.${this.deps.appsDomain}`
  }

  async create (projectId: string, kind: AppKind, input: CreateAppBodyT & { spaFallback?: boolean }): Promise<AppRecord> {
    const scaling = resolveScaling({ instances: 1, min: 1, max: 1 }, { instances: 1, ...input.scaling })
    const now = this.deps.clock.now()
    const record: AppRecord = {
      _id: this.deps.newId(),
      projectId,
      kind,
      name: input.name,
      state: 'created',
      suspended: false,
      scaling: kind === 'static' ? { instances: 0, min: 0, max: 1 } : scaling,
      healthCheckPath: input.healthCheckPath ?? '/',
      spaFallback: input.spaFallback ?? false,
      gitSource: null,
      liveDeploymentId: null,
      createdAt: now,
      updatedAt: now
    }
    try {
      await this.records.insertOne(record)
    } catch (error) {
      if (error instanceof DuplicateKeyError) throw hostingErrors.nameTaken({ name: input.name })
      throw error
    }
    await this.deps.timeline.add(record, 'app.created', `${kind === 'static' ? 'Static app' : 'App'} ${record.name} created`)
    await this.deps.releases.publish(record._id)
    return record
  }

  async list (projectId: string, kind: AppKind): Promise<AppRecord[]> {
    return await this.records.find({ projectId, kind }, { sort: { name: 1 } }).toArray()
  }

  async get (projectId: string, appId: string, kind: AppKind): Promise<AppRecord> {
    const app = await this.records.findOne({ _id: appId, projectId, kind })
    if (app === null) throw hostingErrors.appNotFound()
    return app
  }

  async view (app: AppRecord): Promise<AppT> {
    const current = await this.deps.deployments.current(app)
    const instances = await this.deps.releases.listForApp(app._id, app.liveDeploymentId)
    return {
      ...this.common(app),
      scaling: { ...app.scaling },
      healthCheckPath: app.healthCheckPath,
      degradedReason: this.deps.degradedReason,
      currentDeployment: current === null ? null : deploymentView(current),
      instances: instances.filter((instance) => instance.state !== 'stopped').map(instanceView)
    }
  }

  async staticView (app: AppRecord): Promise<StaticAppT> {
    const current = await this.deps.deployments.current(app)
    return { ...this.common(app), spaFallback: app.spaFallback, currentDeployment: current === null ? null : deploymentView(current) }
  }

  private common (app: AppRecord) {
    return {
      id: app._id,
      projectId: app.projectId,
      name: app.name,
      state: app.state,
      hostname: this.hostname(app),
      gitSource: gitSourceView(app.gitSource),
      liveDeploymentId: app.liveDeploymentId,
      createdAt: isoString(app.createdAt),
      updatedAt: isoString(app.updatedAt)
    }
  }

  /** Stops every instance, discards every artifact and removes all the app holds. */
  async delete (app: AppRecord): Promise<void> {
    const { deletedCount } = await this.records.deleteOne({ _id: app._id })
    if (deletedCount === 0) throw hostingErrors.appNotFound()
    await this.deps.releases.deleteForApp(app._id)
    await this.deps.deployments.deleteForApp(app._id)
    for (const cleanup of this.deps.cleanups) await cleanup(app)
  }

  async deleteAllForProject (projectId: string): Promise<void> {
    for (const app of await this.records.find({ projectId }).toArray()) await this.delete(app)
  }

  /** The gateway answers 503 at once; the instances stop in the reconcile job. */
  async suspend (app: AppRecord): Promise<AppRecord> {
    if (app.suspended) throw hostingErrors.suspended()
    await this.change(app, { suspended: true })
    await this.deps.timeline.add(app, 'suspended', 'The app was suspended')
    await this.deps.releases.publish(app._id)
    await this.deps.reconcile(app._id)
    return await this.records.findOne({ _id: app._id }) ?? app
  }

  /**
   * The live deployment starts again, without a build, in the reconcile job:
   * until its instances are up the app is `deploying` (and without a live
   * deployment, whatever its deployments make it), never still `suspended`.
   */
  async unsuspend (app: AppRecord): Promise<AppRecord> {
    if (!app.suspended) throw hostingErrors.notSuspended()
    const updated = await this.change(app, app.liveDeploymentId === null ? { suspended: false } : { suspended: false, state: 'deploying' })
    await this.deps.timeline.add(app, 'unsuspended', 'The app was resumed')
    if (app.liveDeploymentId === null) await this.deps.releases.publish(app._id)
    await this.deps.reconcile(app._id)
    return app.liveDeploymentId === null ? await this.records.findOne({ _id: app._id }) ?? updated : updated
  }

  async scale (app: AppRecord, input: { instances: number, min?: number, max?: number }): Promise<AppRecord> {
    const scaling = resolveScaling(app.scaling, input)
    const updated = await this.change(app, { scaling })
    await this.deps.timeline.add(app, 'scaled', `Scaled to ${scaling.instances} instance(s) (min ${scaling.min}, max ${scaling.max})`)
    await this.deps.reconcile(app._id)
    return updated
  }

  async setGitSource (app: AppRecord, source: GitSourceRecord): Promise<AppRecord> {
    const updated = await this.change(app, { gitSource: source })
    const where = source.repositoryId === null ? source.url ?? '' : `repository ${source.repositoryId}`
    await this.deps.timeline.add(app, 'git-source.set', `Git source set to ${where} on ${source.branch}${source.autoDeploy ? ', deploying on push' : ''}`)
    return updated
  }

  /** Apps of this server's repository that deploy on push from it. */
  async autoDeploying (repositoryId: string): Promise<AppRecord[]> {
    return await this.records.find({ 'gitSource.repositoryId': repositoryId, 'gitSource.autoDeploy': true, 'gitSource.autoDeployPaused': false }).toArray()
  }

  private async change (app: AppRecord, changes: Partial<AppRecord>): Promise<AppRecord> {
    const updated = await this.records.findOneAndUpdate({ _id: app._id }, { $set: { ...changes, updatedAt: this.deps.clock.now() } }, { returnDocument: 'after' })
    if (updated === null) throw hostingErrors.appNotFound()
    return updated
  }
}

type ScalingValues = { instances: number, min: number, max: number }

/**
 * The scaling a request asks for, over the app's current one. A bound given
 * is held to; one left out widens, if need be, to take the instance count,
 * so `{ instances }` alone always sets the count (a larger one raises `max`,
 * a smaller one lowers `min`).
 */
function resolveScaling (current: ScalingValues, input: { instances: number, min?: number, max?: number }): ScalingValues {
  const { instances } = input
  const min = input.min ?? Math.min(current.min, instances)
  const max = input.max ?? Math.max(current.max, instances, min)
  return checkScaling({ instances, min, max })
}

const scalingInvalid = (field: 'instances' | 'min' | 'max', why: string) => hostingErrors.scalingInvalid({ message: `${field} ${why}`, path: `body.${field}`, why })

function checkScaling (scaling: ScalingValues): ScalingValues {
  const { instances, min, max } = scaling
  if (max > HOSTING_LIMITS.instancesMax) throw scalingInvalid('max', `must be at most ${HOSTING_LIMITS.instancesMax}`)
  if (min > max) throw scalingInvalid('min', 'must not exceed max')
  if (instances < min || instances > max) throw scalingInvalid('instances', `must be between min (${min}) and max (${max})`)
  return { instances, min, max }
}
