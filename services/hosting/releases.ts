import type { Clock } from '../platform/clock.js'
import type { IdGenerator } from '../platform/ids.js'
import type { Store, StoreCollection } from '../store/types.js'
import { APPS, DEPLOYMENTS, INSTANCES, type AppRecord, type DeploymentRecord, type InstanceRecord } from './records.js'
import type { HostRoutes } from './route-table.js'
import type { AppLogs } from './logs.js'
import type { AppSecrets } from './secrets.js'
import { masker } from './secrets.js'
import type { Timeline } from './timeline.js'
import type { ProjectEnvironment } from './project-variables.js'
import { InstanceFailedError, type Artifact, type InstanceEvent, type InstanceLimits, type RunningInstance, type RuntimeDriver } from './runtime.js'
import type { AppState } from '../../schemas/hosting.js'

export interface ReleaseDeps {
  clock: Clock
  newId: IdGenerator
  driver: RuntimeDriver
  routes: HostRoutes
  logs: AppLogs
  secrets: AppSecrets
  timeline: Timeline
  projectEnvironment: ProjectEnvironment
  /** The hosts an app answers to: its default hostname and any verified ones. */
  hostsOf: (app: AppRecord) => Promise<string[]>
  limits: InstanceLimits
  healthTimeoutMs: number
  stopGraceMs: number
  onError: (error: unknown) => void
  /**
   * Set where this process does not supervise (a WORKERS follower): an app's route change becomes the supervising
   * process's reconcile, since the instances and the gateway's route table live there.
   */
  handOff?: (appId: string) => Promise<void>
}

/**
 * Running instances and the gateway's view of them. An app's route is
 * rebuilt from the Store (its live deployment's running instances, or the
 * static tree) and replaced whole, one app at a time, so a switch is atomic
 * for the gateway.
 */
export class Releases {
  private readonly apps: StoreCollection<AppRecord>
  private readonly deployments: StoreCollection<DeploymentRecord>
  private readonly instances: StoreCollection<InstanceRecord>
  private readonly publishing = new Map<string, Promise<void>>()

  constructor (store: Store, private readonly deps: ReleaseDeps) {
    this.apps = store.collection<AppRecord>(APPS)
    this.deployments = store.collection<DeploymentRecord>(DEPLOYMENTS)
    this.instances = store.collection<InstanceRecord>(INSTANCES)
    deps.driver.onEvent((event) => { this.onInstanceEvent(event).catch(deps.onError) })
  }

  async init (): Promise<void> {
    await this.instances.createIndex({ appId: 1, deploymentId: 1 })
    await this.instances.createIndex({ state: 1 })
  }

  /** Starts `count` instances of a deployment, each health-gated; on the first failure the ones started are stopped and it rethrows. */
  async startInstances (app: AppRecord, deployment: DeploymentRecord, artifact: Artifact, count: number): Promise<InstanceRecord[]> {
    const { env, mask } = await this.environment(app._id, deployment)
    const started: InstanceRecord[] = []
    try {
      await Promise.all(Array.from({ length: count }, async () => { started.push(await this.startOne(app, deployment, artifact, env, mask)) }))
    } catch (error) {
      await Promise.all(started.map(async (instance) => { await this.stop(instance, 'the release failed') }))
      throw error
    }
    return started
  }

  /**
   * An instance's environment: the project variables its deployment took,
   * the app's secrets over them (a secret overrides a variable of its name);
   * its log masked with every secret value of either.
   */
  private async environment (appId: string, deployment: DeploymentRecord): Promise<{ env: Record<string, string>, mask: (line: string) => string }> {
    const secrets = await this.deps.secrets.environment(appId)
    const variables = this.deps.projectEnvironment.open(deployment)
    const env = { ...Object.fromEntries(variables.map((variable) => [variable.key, variable.value])), ...secrets }
    return { env, mask: masker([...Object.values(secrets), ...variables.filter((variable) => variable.secret).map((variable) => variable.value)]) }
  }

  private async startOne (app: AppRecord, deployment: DeploymentRecord, artifact: Artifact, env: Record<string, string>, mask: (line: string) => string): Promise<InstanceRecord> {
    const instanceId = this.deps.newId()
    const record: InstanceRecord = { _id: instanceId, appId: app._id, projectId: app.projectId, deploymentId: deployment._id, state: 'starting', running: null, reason: null, startedAt: null, stoppedAt: null }
    await this.instances.insertOne(record)
    const log = this.deps.logs.sink({ appId: app._id, deploymentId: deployment._id, instanceId, kind: 'runtime' }, mask)
    try {
      const running = await this.deps.driver.start({
        appId: app._id,
        deploymentId: deployment._id,
        instanceId,
        artifact,
        env: { ...env, PLINTH_INSTANCE_ID: instanceId, PLINTH_APP_ID: app._id, PLINTH_DEPLOYMENT_ID: deployment._id },
        limits: this.deps.limits,
        healthCheckPath: app.healthCheckPath,
        healthTimeoutMs: this.deps.healthTimeoutMs,
        log
      })
      const now = this.deps.clock.now()
      await this.instances.updateOne({ _id: instanceId }, { $set: { state: 'running', running, startedAt: now } })
      return { ...record, state: 'running', running, startedAt: now }
    } catch (error) {
      const reason = error instanceof InstanceFailedError ? error.reason : String(error)
      await this.instances.updateOne({ _id: instanceId }, { $set: { state: 'crashed', reason, stoppedAt: this.deps.clock.now() } })
      throw error instanceof InstanceFailedError ? error : new InstanceFailedError(reason)
    }
  }

  async stop (instance: InstanceRecord, reason: string): Promise<void> {
    await this.deps.driver.stop(instance._id, this.deps.stopGraceMs)
    await this.instances.updateOne({ _id: instance._id }, { $set: { state: 'stopped', reason, stoppedAt: this.deps.clock.now() } })
  }

  /** Instances of the deployment still starting or running. */
  async live (deploymentId: string): Promise<InstanceRecord[]> {
    return await this.instances.find({ deploymentId, state: { $in: ['starting', 'running'] } }, { sort: { _id: 1 } }).toArray()
  }

  async listForApp (appId: string, deploymentId: string | null): Promise<InstanceRecord[]> {
    if (deploymentId === null) return []
    return await this.instances.find({ appId, deploymentId }, { sort: { _id: 1 } }).toArray()
  }

  /** Stops what still runs of one deployment: a superseded one, or what an interrupted release left. */
  async stopLeftovers (deploymentId: string): Promise<void> {
    const running = await this.live(deploymentId)
    await Promise.all(running.map(async (instance) => { await this.stop(instance, 'its deployment is no longer live') }))
  }

  /** Stops every instance of the app, whichever deployment. */
  async stopAll (appId: string, reason: string): Promise<void> {
    const running = await this.instances.find({ appId, state: { $in: ['starting', 'running'] } }).toArray()
    await Promise.all(running.map(async (instance) => { await this.stop(instance, reason) }))
  }

  /**
   * Makes the running instances match what the app wants: its scaling on the
   * live deployment, none while suspended. Instances of other deployments
   * (left by an interrupted release) are stopped. Publishes the route after.
   */
  async reconcile (appId: string): Promise<void> {
    const app = await this.apps.findOne({ _id: appId })
    // Deleted meanwhile (by another worker of WORKERS, which cannot stop the instances itself): what it left goes here.
    if (app === null) { await this.deleteForApp(appId); return }
    const live = app.liveDeploymentId === null ? null : await this.deployments.findOne({ _id: app.liveDeploymentId })
    if (app.kind === 'container' && live !== null && live.artifact !== null) {
      const wanted = app.suspended ? 0 : app.scaling.instances
      const running = await this.live(live._id)
      if (running.length < wanted) {
        await this.startInstances(app, live, live.artifact, wanted - running.length).catch(async (error: unknown) => {
          await this.deps.timeline.add(app, 'instance.failed', `An instance did not start: ${error instanceof Error ? error.message : String(error)}`, live._id)
        })
      } else if (running.length > wanted) {
        await Promise.all(running.slice(wanted).reverse().map(async (instance) => { await this.stop(instance, app.suspended ? 'suspended' : 'scaled down') }))
      }
    }
    const strays = await this.instances.find({ appId, state: { $in: ['starting', 'running'] }, deploymentId: { $ne: app.liveDeploymentId ?? '' } }).toArray()
    await Promise.all(strays.map(async (instance) => { await this.stop(instance, 'not part of the live deployment') }))
    await this.publish(appId)
  }

  /** Rebuilds the app's route from the Store; one publish per app at a time, in order. */
  async publish (appId: string): Promise<void> {
    if (this.deps.handOff !== undefined) { await this.deps.handOff(appId); return }
    const previous = this.publishing.get(appId) ?? Promise.resolve()
    const next = previous.then(async () => { await this.publishNow(appId) })
    this.publishing.set(appId, next.catch(() => {}))
    await next
  }

  private async publishNow (appId: string): Promise<void> {
    const app = await this.apps.findOne({ _id: appId })
    if (app === null) { this.deps.routes.remove(appId); return }
    const live = app.liveDeploymentId === null ? null : await this.deployments.findOne({ _id: app.liveDeploymentId })
    const hosts = await this.deps.hostsOf(app)
    if (app.kind === 'static') {
      if (live?.artifact == null) { this.deps.routes.remove(appId); return }
      this.deps.routes.set({ kind: 'static', appId, projectId: app.projectId, suspended: app.suspended, deploymentId: live._id, root: live.artifact.ref, spaFallback: app.spaFallback }, hosts)
    } else {
      const running = live === null ? [] : (await this.live(live._id)).filter((instance) => instance.state === 'running' && instance.running !== null)
      const upstreams = running.map((instance) => ({ instanceId: instance._id, host: (instance.running as RunningInstance).host, port: (instance.running as RunningInstance).port }))
      this.deps.routes.set({ kind: 'app', appId, projectId: app.projectId, suspended: app.suspended, upstreams }, hosts)
    }
    await this.updateState(app, live)
  }

  /** The app's state from what runs: suspended, deploying, or how many of its wanted instances are up. */
  private async updateState (app: AppRecord, live: DeploymentRecord | null): Promise<void> {
    // The live deployment is not counted while its release writes it `live`: the app reads what it serves by then, so a
    // client that reads the deployment `live` reads the app running too.
    const busy = await this.deployments.countDocuments({ appId: app._id, state: { $in: ['queued', 'building', 'releasing'] }, _id: { $ne: live?._id ?? '' } })
    let state: AppState
    if (app.suspended) state = 'suspended'
    else if (busy > 0 && live === null) state = 'deploying'
    else if (live === null) state = 'created'
    else if (app.kind === 'static') state = busy > 0 ? 'deploying' : 'running'
    else {
      const up = (await this.live(live._id)).filter((instance) => instance.state === 'running').length
      state = busy > 0 ? 'deploying' : up >= app.scaling.instances ? 'running' : up === 0 ? 'crashed' : 'degraded'
    }
    if (state === app.state) return
    await this.apps.updateOne({ _id: app._id }, { $set: { state, updatedAt: this.deps.clock.now() } })
    await this.deps.timeline.add(app, 'app.state', `The app is ${state}`)
  }

  private async onInstanceEvent (event: InstanceEvent): Promise<void> {
    const instance = await this.instances.findOne({ _id: event.instanceId })
    if (instance === null) return
    const app = { _id: instance.appId, projectId: instance.projectId }
    if (event.type === 'crashed') {
      await this.instances.updateOne({ _id: instance._id }, { $set: { state: 'crashed', reason: event.reason } })
      await this.deps.timeline.add(app, 'instance.crashed', `Instance ${instance._id} crashed: ${event.reason}`, instance.deploymentId)
    } else if (event.type === 'restarted') {
      await this.instances.updateOne({ _id: instance._id }, { $set: { state: 'running', running: event.instance, reason: null } })
      await this.deps.timeline.add(app, 'instance.restarted', `Instance ${instance._id} restarted (attempt ${event.attempt})`, instance.deploymentId)
    } else {
      await this.instances.updateOne({ _id: instance._id }, { $set: { state: 'crashed', reason: event.reason, stoppedAt: this.deps.clock.now() } })
      await this.deps.timeline.add(app, 'instance.gave-up', `Instance ${instance._id} stopped restarting after ${event.attempts} attempts: ${event.reason}`, instance.deploymentId)
    }
    await this.publish(instance.appId)
  }

  /**
   * After a restart: hands the driver every instance the Store says runs;
   * those it re-attaches to keep running, the rest are marked stopped. The
   * returned app ids need a reconcile.
   */
  async adopt (): Promise<string[]> {
    const recorded = await this.instances.find({ state: { $in: ['starting', 'running'] } }).toArray()
    const known = recorded.filter((instance) => instance.running !== null)
    const masks = new Map<string, (line: string) => string>()
    for (const deploymentId of new Set(known.map((instance) => instance.deploymentId))) {
      const deployment = await this.deployments.findOne({ _id: deploymentId })
      if (deployment !== null) masks.set(deploymentId, (await this.environment(deployment.appId, deployment)).mask)
    }
    const adopted = new Set((await this.deps.driver.adopt(known.map((instance) => instance.running as RunningInstance), (instanceId) => {
      const instance = known.find((candidate) => candidate._id === instanceId) as InstanceRecord
      return this.deps.logs.sink({ appId: instance.appId, deploymentId: instance.deploymentId, instanceId, kind: 'runtime' }, masks.get(instance.deploymentId) ?? ((line) => line))
    })).map((running) => running.instanceId))
    const lost = recorded.filter((instance) => !adopted.has(instance._id))
    if (lost.length > 0) await this.instances.updateMany({ _id: { $in: lost.map((instance) => instance._id) } }, { $set: { state: 'stopped', reason: 'gone after a server restart', stoppedAt: this.deps.clock.now() } })
    const apps = await this.apps.find({ liveDeploymentId: { $ne: null } }, { projection: { _id: 1 } }).toArray()
    return apps.map((app) => app._id)
  }

  /** Instances running on this node now, for usage. */
  async running (): Promise<InstanceRecord[]> {
    return await this.instances.find({ state: 'running' }).toArray()
  }

  async deleteForApp (appId: string): Promise<void> {
    if (this.deps.handOff !== undefined) { await this.deps.handOff(appId); return }
    await this.stopAll(appId, 'the app was deleted')
    await this.instances.deleteMany({ appId })
    this.deps.routes.remove(appId)
  }
}
