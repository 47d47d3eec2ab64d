import { mkdtemp } from 'node:fs/promises'
import { join } from 'node:path'
import type { Clock } from '../platform/clock.js'
import { hostingErrors } from './errors.js'
import type { IdGenerator } from '../platform/ids.js'
import type { Store, StoreCollection } from '../store/types.js'
import { isoString } from '../platform/iso-dates.js'
import type { DeploymentT, DeploymentState } from '../../schemas/hosting.js'
import { APPS, DEPLOYMENTS, FINISHED_DEPLOYMENT_STATES, type AppRecord, type DeploymentRecord, type DeploymentSource } from './records.js'
import type { AppLogs } from './logs.js'
import type { Releases } from './releases.js'
import { masker, type AppSecrets } from './secrets.js'
import type { Timeline } from './timeline.js'
import type { ProjectEnvironment } from './project-variables.js'
import { BuildCanceledError, BuildFailedError, InstanceFailedError, type Artifact, type RuntimeDriver } from './runtime.js'
import { removeDir, SourceError } from './sources.js'
import { BuildSlots } from './build-slots.js'
import { DeferJobError } from '../jobs/job.js'

/** The job whose one run per app works through that app's deployments, oldest first. */
export const DEPLOY_JOB = 'hosting.deploy'
/** How long a deployment whose project holds every build slot waits before it looks again. */
export const BUILD_SLOT_RETRY_MS = 2_000

export interface DeploymentDeps {
  clock: Clock
  newId: IdGenerator
  driver: RuntimeDriver
  releases: Releases
  logs: AppLogs
  secrets: AppSecrets
  timeline: Timeline
  projectEnvironment: ProjectEnvironment
  /** Where sources are unpacked for a build; each deployment gets a fresh folder, removed after. */
  workDir: string
  /** Fills `dir` with the deployment's source and returns the folder to build from. */
  prepareSource: (app: AppRecord, deployment: DeploymentRecord, dir: string) => Promise<string>
  /** Asks for a run of the app's deployment job (`enqueueKeyed(DEPLOY_JOB, appId)`). */
  wake: (appId: string) => Promise<void>
  addBuildSeconds: (app: AppRecord, seconds: number) => void
  /** A build still running after this long is stopped and fails (HOSTING_BUILD_TIMEOUT_SECONDS). */
  buildTimeoutMs: number
  /** Builds of one project that may run at once, on all nodes together (HOSTING_BUILDS_PER_PROJECT). */
  buildsPerProject: number
}

export function deploymentView (record: DeploymentRecord): DeploymentT {
  const source = record.source
  return {
    id: record._id,
    appId: record.appId,
    state: record.state,
    reason: record.reason,
    source: {
      type: source.type,
      uploadId: source.type === 'upload' ? source.uploadId : null,
      sha256: source.type === 'upload' ? source.sha256 : null,
      repositoryId: source.type === 'git' ? source.repositoryId : null,
      url: source.type === 'git' ? source.url : null,
      branch: source.type === 'git' ? source.branch : null,
      commit: source.type === 'git' ? source.commit : null,
      subdirectory: source.type === 'git' ? source.subdirectory : null
    },
    trigger: record.trigger,
    artifactId: record.artifact?.id ?? null,
    rollbackOf: record.rollbackOf,
    buildSeconds: record.artifact === null || record.trigger === 'rollback' ? null : record.artifact.buildSeconds,
    createdBy: record.createdBy,
    createdAt: isoString(record.createdAt),
    startedAt: record.startedAt === null ? null : isoString(record.startedAt),
    finishedAt: record.finishedAt === null ? null : isoString(record.finishedAt),
    liveAt: record.liveAt === null ? null : isoString(record.liveAt)
  }
}

/** How often a running build reads its record for a cancel served by another process (one read by id). */
const CANCEL_POLL_MS = 1000

const deploymentNotFound = () => hostingErrors.deploymentNotFound()

/**
 * Deployments: queued by the API or a push, run one at a time per app by the
 * app's keyed job: build (or, for a rollback, reuse an earlier artifact),
 * start the instances health-gated, switch the route, stop the previous
 * deployment's instances. A server that died mid-way finds the deployment
 * where it stopped when the job is reclaimed, and starts that step over.
 */
export class Deployments {
  private readonly records: StoreCollection<DeploymentRecord>
  private readonly apps: StoreCollection<AppRecord>
  /** Builds running on this node, so a cancel can stop one at once. */
  private readonly building = new Map<string, AbortController>()
  private readonly slots: BuildSlots

  constructor (store: Store, private readonly deps: DeploymentDeps) {
    this.records = store.collection<DeploymentRecord>(DEPLOYMENTS)
    this.apps = store.collection<AppRecord>(APPS)
    this.slots = new BuildSlots(store, { clock: deps.clock, perProject: deps.buildsPerProject })
  }

  async init (): Promise<void> {
    await this.records.createIndex({ appId: 1, _id: -1 })
    await this.records.createIndex({ appId: 1, state: 1 })
    await this.slots.init()
  }

  /** Whether a deployment of `commit` is queued, under way or live for the app (a push of it needs no other). */
  async pendingOf (appId: string, commit: string): Promise<boolean> {
    return await this.records.countDocuments({ appId, 'source.commit': commit, state: { $in: ['queued', 'building', 'releasing', 'live'] } }) > 0
  }

  /** The commit an external git source's clone gave, once the build knows it. */
  async recordCommit (deploymentId: string, commit: string): Promise<void> {
    await this.records.updateOne({ _id: deploymentId }, { $set: { 'source.commit': commit } })
  }

  async create (app: AppRecord, input: { source: DeploymentSource, trigger: DeploymentRecord['trigger'], createdBy: string | null, artifact?: Artifact, rollbackOf?: string }): Promise<DeploymentT> {
    const record: DeploymentRecord = {
      _id: this.deps.newId(),
      appId: app._id,
      projectId: app.projectId,
      state: 'queued',
      reason: null,
      source: input.source,
      trigger: input.trigger,
      artifact: input.artifact ?? null,
      rollbackOf: input.rollbackOf ?? null,
      cancelRequested: false,
      createdBy: input.createdBy,
      createdAt: this.deps.clock.now(),
      startedAt: null,
      finishedAt: null,
      liveAt: null
    }
    await this.records.insertOne(record)
    await this.deps.timeline.add(app, 'deployment.state', `Deployment ${record._id} queued (${input.trigger})`, record._id)
    await this.deps.wake(app._id)
    return deploymentView(record)
  }

  async list (appId: string, limit: number): Promise<DeploymentT[]> {
    return (await this.records.find({ appId }, { sort: { _id: -1 }, limit }).toArray()).map(deploymentView)
  }

  async find (appId: string, deploymentId: string): Promise<DeploymentRecord> {
    const record = await this.records.findOne({ _id: deploymentId, appId })
    if (record === null) throw deploymentNotFound()
    return record
  }

  /** The live deployment, else the newest. */
  async current (app: AppRecord): Promise<DeploymentRecord | null> {
    if (app.liveDeploymentId !== null) return await this.records.findOne({ _id: app.liveDeploymentId })
    return (await this.records.find({ appId: app._id }, { sort: { _id: -1 }, limit: 1 }).toArray())[0] ?? null
  }

  /**
   * Queued: canceled at once. Building or releasing: asked to stop, which it does at its next step; a build stops
   * at once on this process, and within CANCEL_POLL_MS when another process (a cluster's lead) runs it.
   */
  async cancel (app: AppRecord, deploymentId: string): Promise<DeploymentT> {
    const record = await this.find(app._id, deploymentId)
    if (FINISHED_DEPLOYMENT_STATES.includes(record.state)) throw hostingErrors.deploymentFinished({ state: record.state })
    const queued = await this.records.findOneAndUpdate({ _id: record._id, state: 'queued' }, { $set: { state: 'canceled', reason: 'canceled before it started', cancelRequested: true, finishedAt: this.deps.clock.now() } }, { returnDocument: 'after' })
    if (queued !== null) {
      await this.deps.timeline.add(app, 'deployment.state', `Deployment ${record._id} canceled`, record._id)
      return deploymentView(queued)
    }
    const asked = await this.records.findOneAndUpdate({ _id: record._id }, { $set: { cancelRequested: true } }, { returnDocument: 'after' })
    this.building.get(record._id)?.abort()
    return deploymentView(asked ?? record)
  }

  /** A new deployment of an older one's artifact: nothing is built, and git auto-deploy pauses so the next push does not undo it. */
  async rollback (app: AppRecord, deploymentId: string, createdBy: string | null): Promise<DeploymentT> {
    const target = await this.find(app._id, deploymentId)
    if (target.artifact === null) throw hostingErrors.noArtifact()
    if (app.gitSource !== null && app.gitSource.autoDeploy) {
      await this.apps.updateOne({ _id: app._id }, { $set: { 'gitSource.autoDeployPaused': true, updatedAt: this.deps.clock.now() } })
      await this.deps.timeline.add(app, 'git-source.paused', 'Auto-deploy paused by a rollback; set the git source again to resume it')
    }
    return await this.create(app, { source: { type: 'rollback' }, trigger: 'rollback', createdBy, artifact: target.artifact, rollbackOf: target._id })
  }

  /**
   * The job: the app's oldest deployment not finished, run to its end. One
   * per run, so a server shutting down waits for one deployment at most;
   * when more are due the job asks for itself again.
   */
  async runNext (appId: string): Promise<{ ran: string | null }> {
    const due = await this.records.find({ appId, state: { $in: ['queued', 'building', 'releasing'] } }, { sort: { _id: 1 }, limit: 2 }).toArray()
    if (due.length === 0) return { ran: null }
    await this.run(due[0])
    if (due.length > 1) await this.deps.wake(appId)
    return { ran: due[0]._id }
  }

  private async setState (app: AppRecord, record: DeploymentRecord, state: DeploymentState, changes: Partial<DeploymentRecord> = {}): Promise<DeploymentRecord> {
    const finished = FINISHED_DEPLOYMENT_STATES.includes(state) && state !== 'live'
    const now = this.deps.clock.now()
    const next = { ...record, ...changes, state, ...(finished ? { finishedAt: now } : {}) }
    await this.records.updateOne({ _id: record._id }, { $set: { ...changes, state, ...(finished ? { finishedAt: now } : {}) } })
    await this.deps.timeline.add(app, 'deployment.state', `Deployment ${record._id} ${state.replace('_', ' ')}${next.reason === null ? '' : `: ${next.reason}`}`, record._id)
    await this.deps.releases.publish(app._id)
    return next
  }

  private async run (initial: DeploymentRecord): Promise<void> {
    const app = await this.apps.findOne({ _id: initial.appId })
    if (app === null) { await this.records.updateOne({ _id: initial._id }, { $set: { state: 'canceled', reason: 'the app was deleted' } }); return }
    let record = initial
    if (record.cancelRequested) { await this.setState(app, record, 'canceled', { reason: 'canceled' }); return }
    // Anything a dead worker left of this deployment starts over.
    await this.deps.releases.stopLeftovers(record._id)
    if (record.artifact === null || record.state === 'building') {
      if (!await this.slots.take(record.projectId, record._id, async (ids) => await this.unfinished(ids))) await this.waitForSlot(app, record)
      try {
        record = await this.setState(app, record, 'building', { startedAt: this.deps.clock.now(), reason: null })
        const built = await this.build(app, record)
        if (built === null) return
        record = { ...record, artifact: built }
      } finally {
        await this.slots.release(record._id)
      }
    }
    record = await this.refreshed(record)
    if (record.cancelRequested) { await this.setState(app, record, 'canceled', { reason: 'canceled' }); return }
    record = await this.setState(app, record, 'releasing', record.startedAt === null ? { startedAt: this.deps.clock.now() } : {})
    await this.release(app, record)
  }

  /** Of these deployments, those that may still hold a build slot: queued (about to build) or building. */
  private async unfinished (ids: string[]): Promise<Set<string>> {
    const records = await this.records.find({ _id: { $in: ids }, state: { $in: ['queued', 'building'] } }, { projection: { _id: 1 } }).toArray()
    return new Set(records.map((record) => record._id))
  }

  /** Says why the deployment is still queued (once), then hands the job back to the queue to try again later. */
  private async waitForSlot (app: AppRecord, record: DeploymentRecord): Promise<never> {
    const reason = `waiting for a build slot: this project already runs ${this.deps.buildsPerProject} build${this.deps.buildsPerProject === 1 ? '' : 's'} at a time (HOSTING_BUILDS_PER_PROJECT)`
    if (record.reason !== reason) {
      await this.records.updateOne({ _id: record._id }, { $set: { reason } })
      await this.deps.timeline.add(app, 'deployment.state', `Deployment ${record._id} ${reason}`, record._id)
    }
    throw new DeferJobError(reason, BUILD_SLOT_RETRY_MS)
  }

  private async refreshed (record: DeploymentRecord): Promise<DeploymentRecord> {
    return await this.records.findOne({ _id: record._id }) ?? record
  }

  /**
   * Builds the artifact, or records why not and returns null. The build gets
   * the secrets marked for builds only, and stops at the build time limit;
   * its log is masked with every secret's value.
   */
  private async build (app: AppRecord, record: DeploymentRecord): Promise<Artifact | null> {
    const env = await this.deps.secrets.buildEnvironment(app._id)
    const log = this.deps.logs.sink({ appId: app._id, deploymentId: record._id, instanceId: null, kind: 'build' }, masker(Object.values(await this.deps.secrets.environment(app._id))))
    const controller = new AbortController()
    const deadline = AbortSignal.timeout(this.deps.buildTimeoutMs)
    this.building.set(record._id, controller)
    const dir = await mkdtemp(join(this.deps.workDir, `${record._id}-`))
    // A cancel served by another worker only marks the record; this is how it reaches the build here.
    const watch = setInterval(() => {
      this.records.findOne({ _id: record._id }).then((now) => { if (now?.cancelRequested === true) controller.abort() }, () => undefined)
    }, CANCEL_POLL_MS)
    watch.unref()
    try {
      const sourceDir = await this.deps.prepareSource(app, record, dir)
      const signal = AbortSignal.any([controller.signal, deadline])
      const artifact = await this.deps.driver.build({ projectId: app.projectId, appId: app._id, deploymentId: record._id, sourceDir, kind: app.kind === 'static' ? 'static' : 'auto', env, log, signal })
      await this.records.updateOne({ _id: record._id }, { $set: { artifact } })
      this.deps.addBuildSeconds(app, artifact.buildSeconds)
      log.write(`Built artifact ${artifact.id} (${artifact.kind}) in ${artifact.buildSeconds.toFixed(1)} s`, 'system')
      return artifact
    } catch (error) {
      if (deadline.aborted && !controller.signal.aborted) {
        const reason = `The build ran longer than ${Math.round(this.deps.buildTimeoutMs / 1000)} s (HOSTING_BUILD_TIMEOUT_SECONDS) and was stopped`
        log.write(`Build failed: ${reason}`, 'system')
        await this.setState(app, record, 'build_failed', { reason })
      } else if (error instanceof BuildCanceledError || controller.signal.aborted) {
        await this.setState(app, record, 'canceled', { reason: 'canceled during the build' })
      } else if (error instanceof BuildFailedError || error instanceof SourceError) {
        log.write(`Build failed: ${error instanceof BuildFailedError ? error.reason : error.message}`, 'system')
        await this.setState(app, record, 'build_failed', { reason: error instanceof BuildFailedError ? error.reason : error.message })
      } else {
        throw error
      }
      return null
    } finally {
      clearInterval(watch)
      this.building.delete(record._id)
      await log.flushed()
      await removeDir(dir)
    }
  }

  /**
   * Takes the project's variables (a container app's, suspended or not, so
   * what it starts later has them), starts the instances, switches the route,
   * says live, then stops what the previous live deployment ran.
   */
  private async release (app: AppRecord, initial: DeploymentRecord): Promise<void> {
    let record = initial
    const artifact = record.artifact as Artifact
    const current = await this.apps.findOne({ _id: app._id }) ?? app
    if (current.kind === 'container') {
      const secretNames = (await this.deps.secrets.list(app._id)).map((secret) => secret.name)
      const variables = await this.deps.projectEnvironment.take(current, record, secretNames)
      await this.records.updateOne({ _id: record._id }, { $set: { variables } })
      record = { ...record, variables }
    }
    if (current.kind === 'container' && !current.suspended) {
      try {
        await this.deps.releases.startInstances(current, record, artifact, current.scaling.instances)
      } catch (error) {
        const reason = error instanceof InstanceFailedError ? error.reason : String(error)
        await this.setState(app, record, 'failed', { reason })
        return
      }
    }
    if ((await this.refreshed(record)).cancelRequested) {
      await this.deps.releases.stopLeftovers(record._id)
      await this.setState(app, record, 'canceled', { reason: 'canceled during the release' })
      return
    }
    const previous = current.liveDeploymentId
    const now = this.deps.clock.now()
    await this.apps.updateOne({ _id: app._id }, { $set: { liveDeploymentId: record._id, updatedAt: now } })
    if (record.source.type === 'git' && record.source.commit !== null && current.gitSource !== null) {
      await this.apps.updateOne({ _id: app._id }, { $set: { 'gitSource.lastCommit': record.source.commit } })
    }
    // The gateway switches before the state says so: a client that reads `live` is routed to this deployment, never to
    // the route the app had before (none yet, a 502 or 404; or the previous deployment).
    await this.deps.releases.publish(app._id)
    const replaced = previous !== null && previous !== record._id ? await this.records.findOne({ _id: previous }) : null
    // The previous deployment stops reading `live` before this one starts to: no client reads two live deployments.
    if (replaced !== null) await this.setState(app, replaced, 'superseded', { reason: `superseded by ${record._id}` })
    await this.setState(app, record, 'live', { liveAt: now, finishedAt: now })
    if (previous !== null && previous !== record._id) await this.deps.releases.stopLeftovers(previous)
    await this.deps.releases.reconcile(app._id)
  }

  /** When the app goes: its builds stop and its artifacts are discarded. */
  async deleteForApp (appId: string): Promise<void> {
    const records = await this.records.find({ appId }).toArray()
    for (const record of records) this.building.get(record._id)?.abort()
    const artifacts = new Map(records.filter((record) => record.artifact !== null).map((record) => [(record.artifact as Artifact).id, record.artifact as Artifact]))
    for (const artifact of artifacts.values()) await this.deps.driver.discard(artifact)
    await this.records.deleteMany({ appId })
  }
}
