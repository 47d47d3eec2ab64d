import { constants } from 'node:os'
import type { Readable } from 'node:stream'
import { setTimeout as sleep } from 'node:timers/promises'
import type Docker from 'dockerode'
import type { Clock } from '../../clock.js'
import { InstanceFailedError, type InstanceEvent, type InstanceSpec, type LogSink, type RunningInstance } from '../runtime.js'
import { DRIVER_LABEL_VALUE, errorMessage, isNotFound, isNotModified, LABELS } from './engine.js'
import { probeHealth } from './health.js'
import { readContainerOutput } from './output.js'

/**
 * Containers as instances: created with the app's environment and limits,
 * published on the host's loopback, health-checked from the host, then
 * watched. The engine's restart policy is off on purpose: this driver
 * restarts with backoff and reports every crash, as the process driver does.
 */

/** The port an app listens on inside its container; the engine picks the host side. */
export const CONTAINER_PORT = 8080
const HEALTH_INTERVAL_MS = 200
const OUTPUT_DRAIN_MS = 2000

export interface SupervisionOptions {
  /** Consecutive restarts tried before giving up. */
  maxRestarts: number
  restartBaseMs: number
  restartMaxMs: number
  /** A run at least this long counts as recovered: the restart count starts again. */
  stableAfterMs: number
}

export interface InstancesOptions {
  docker: Docker
  clock: Clock
  /** The host address ports are published on and probed at. */
  publishHost: string
  supervision: SupervisionOptions
}

interface Exit { reason: string, exitCode: number | null, signal: string | null }

class LaunchFailure extends InstanceFailedError {
  constructor (readonly exit: Exit) { super(exit.reason) }
}

/** Wrapped so that returning it from an async function does not wait for the exit. */
interface Launched { exit: Promise<Exit | null> }

interface Tracked {
  instance: RunningInstance
  container: Docker.Container
  healthPath: string
  healthTimeoutMs: number
  log: LogSink
  stopping: boolean
  /** Aborted by stop and close: ends waits, probes and backoff sleeps. */
  watch: AbortController
  output: Readable | null
  /** Settles when the current output stream has been read to its end. */
  outputDone: Promise<void>
  attempt: number
  healthyAt: number
}

const SIGNAL_NAMES = new Map(Object.entries(constants.signals).map(([name, number]) => [number as number, name]))

async function describeExit (container: Docker.Container, statusCode: number): Promise<Exit> {
  const info = await container.inspect().catch(() => null)
  if (info?.State.OOMKilled === true) {
    return { reason: `killed for going over its memory limit (${Math.round((info.HostConfig.Memory ?? 0) / 1048576)} MB)`, exitCode: null, signal: 'SIGKILL' }
  }
  // The init process reports a child killed by signal N as 128 + N.
  const signal = statusCode > 128 ? SIGNAL_NAMES.get(statusCode - 128) ?? null : null
  if (signal !== null) return { reason: `killed by ${signal}`, exitCode: null, signal }
  return { reason: `exited with code ${statusCode}`, exitCode: statusCode, signal: null }
}

function publishedPort (info: Docker.ContainerInspectInfo): number {
  const binding = info.NetworkSettings.Ports?.[`${CONTAINER_PORT}/tcp`]?.[0]
  const port = Number(binding?.HostPort)
  if (!Number.isInteger(port) || port <= 0) throw new InstanceFailedError('the engine published no port for the instance')
  return port
}

export class ContainerInstances {
  private readonly tracked = new Map<string, Tracked>()
  private readonly listeners: Array<(event: InstanceEvent) => void> = []

  constructor (private readonly options: InstancesOptions) {}

  onEvent (listener: (event: InstanceEvent) => void): void {
    this.listeners.push(listener)
  }

  async start (spec: InstanceSpec): Promise<RunningInstance> {
    if (spec.artifact.driver !== 'container' || spec.artifact.kind === 'static' || spec.artifact.command === null) {
      throw new InstanceFailedError('this artifact is not a container image (static sites are served by the gateway)')
    }
    const env = { ...spec.env, PORT: String(CONTAINER_PORT), HOST: '0.0.0.0', PLINTH_INSTANCE_ID: spec.instanceId }
    const container = await this.options.docker.createContainer({
      Image: spec.artifact.ref,
      Env: Object.entries(env).map(([name, value]) => `${name}=${value}`),
      Labels: {
        [LABELS.driver]: DRIVER_LABEL_VALUE,
        [LABELS.app]: spec.appId,
        [LABELS.deployment]: spec.deploymentId,
        [LABELS.artifact]: spec.artifact.id,
        [LABELS.instance]: spec.instanceId,
        [LABELS.healthPath]: spec.healthCheckPath,
        [LABELS.healthTimeoutMs]: String(spec.healthTimeoutMs)
      },
      ExposedPorts: { [`${CONTAINER_PORT}/tcp`]: {} },
      HostConfig: {
        // A small init as PID 1 passes signals on and reaps, so an app's own SIGTERM handling works.
        Init: true,
        Memory: spec.limits.memoryMb * 1048576,
        MemorySwap: spec.limits.memoryMb * 1048576,
        NanoCpus: Math.round(spec.limits.cpus * 1e9),
        PidsLimit: spec.limits.pids,
        RestartPolicy: { Name: 'no' },
        PortBindings: { [`${CONTAINER_PORT}/tcp`]: [{ HostIp: this.options.publishHost, HostPort: '' }] }
      }
    }).catch((error: unknown) => { throw new InstanceFailedError(`the engine refused the instance: ${errorMessage(error)}`) })
    const tracked = this.newTracked(
      { instanceId: spec.instanceId, appId: spec.appId, deploymentId: spec.deploymentId, driver: 'container', host: this.options.publishHost, port: 0, handle: container.id, startedAt: this.options.clock.now().toISOString() },
      container, spec.healthCheckPath, spec.healthTimeoutMs, spec.log
    )
    this.tracked.set(spec.instanceId, tracked)
    let launched: Launched
    try {
      launched = await this.launch(tracked)
    } catch (error) {
      this.forget(tracked)
      await removeContainer(container)
      if (error instanceof InstanceFailedError) throw new InstanceFailedError(error.reason)
      throw new InstanceFailedError(`the engine refused the instance: ${errorMessage(error)}`)
    }
    void this.supervise(tracked, launched.exit)
    return { ...tracked.instance }
  }

  /** Starts the container, follows its output and waits for health. */
  private async launch (tracked: Tracked): Promise<Launched> {
    // Attached before start, so the first lines are not lost.
    await this.follow(tracked)
    await tracked.container.start()
    tracked.instance.port = publishedPort(await tracked.container.inspect())
    tracked.instance.startedAt = this.options.clock.now().toISOString()
    const exit = this.waitForExit(tracked)
    await this.becomeHealthy(tracked, exit)
    tracked.healthyAt = this.options.clock.nowMs()
    return { exit }
  }

  private async follow (tracked: Tracked): Promise<void> {
    tracked.output?.destroy()
    const output = await tracked.container.attach({ stream: true, stdout: true, stderr: true }) as unknown as Readable
    tracked.output = output
    tracked.outputDone = readContainerOutput(output, (line, stream) => tracked.log.write(line, stream))
  }

  private async waitForExit (tracked: Tracked): Promise<Exit | null> {
    try {
      const result = await tracked.container.wait({ abortSignal: tracked.watch.signal }) as { StatusCode: number }
      return await describeExit(tracked.container, result.StatusCode)
    } catch (error) {
      if (tracked.watch.signal.aborted) return null
      return { reason: `lost track of the container: ${errorMessage(error)}`, exitCode: null, signal: null }
    }
  }

  private async becomeHealthy (tracked: Tracked, exit: Promise<Exit | null>): Promise<void> {
    let exited: Exit | null = null
    let gone = false
    void exit.then((result) => { exited = result; gone = true })
    const startedAt = this.options.clock.nowMs()
    for (;;) {
      const status = await probeHealth(tracked.instance.host, tracked.instance.port, tracked.healthPath, tracked.watch.signal)
      if (tracked.watch.signal.aborted) throw new InstanceFailedError('stopped before it became healthy')
      if (gone) {
        // Its last words (why it exited) are worth the short wait for the output's end.
        await Promise.race([tracked.outputDone, sleep(OUTPUT_DRAIN_MS)])
        throw new LaunchFailure(exited ?? { reason: 'stopped before it became healthy', exitCode: null, signal: null })
      }
      if (status !== null && status < 500) return
      if (this.options.clock.nowMs() - startedAt >= tracked.healthTimeoutMs) {
        throw new LaunchFailure({ reason: `unhealthy after ${tracked.healthTimeoutMs} ms`, exitCode: null, signal: null })
      }
      await sleep(HEALTH_INTERVAL_MS, undefined, { signal: tracked.watch.signal }).catch(() => undefined)
    }
  }

  private async supervise (tracked: Tracked, firstExit: Promise<Exit | null>): Promise<void> {
    const { supervision, clock } = this.options
    let exit = await firstExit
    let ranHealthy = true
    while (exit !== null && !tracked.stopping) {
      this.emit({ type: 'crashed', instanceId: tracked.instance.instanceId, reason: exit.reason, exitCode: exit.exitCode, signal: exit.signal })
      tracked.log.write(`Instance ${exit.reason}`, 'system')
      if (ranHealthy && clock.nowMs() - tracked.healthyAt >= supervision.stableAfterMs) tracked.attempt = 0
      tracked.attempt++
      if (tracked.attempt > supervision.maxRestarts) {
        const reason = `gave up after ${supervision.maxRestarts} restarts; last: ${exit.reason}`
        tracked.log.write(`Instance ${reason}`, 'system')
        this.forget(tracked)
        await removeContainer(tracked.container)
        this.emit({ type: 'gave-up', instanceId: tracked.instance.instanceId, reason, attempts: supervision.maxRestarts })
        return
      }
      const delay = Math.min(supervision.restartBaseMs * 2 ** (tracked.attempt - 1), supervision.restartMaxMs)
      const slept = await sleep(delay, true, { signal: tracked.watch.signal }).catch(() => false)
      if (!slept || tracked.stopping) return
      try {
        const next = await this.launch(tracked)
        ranHealthy = true
        this.emit({ type: 'restarted', instanceId: tracked.instance.instanceId, attempt: tracked.attempt, instance: { ...tracked.instance } })
        exit = await next.exit
      } catch (error) {
        if (tracked.watch.signal.aborted) return
        ranHealthy = false
        await tracked.container.kill().catch(() => undefined)
        exit = error instanceof LaunchFailure ? error.exit : { reason: `could not restart: ${errorMessage(error)}`, exitCode: null, signal: null }
      }
    }
  }

  async stop (instanceId: string, graceMs: number): Promise<void> {
    const tracked = this.tracked.get(instanceId)
    if (tracked !== undefined) {
      tracked.stopping = true
      tracked.watch.abort()
      this.tracked.delete(instanceId)
      await stopContainer(tracked.container, graceMs)
      // The last lines (what the app said on SIGTERM) arrive after the engine's stop returns.
      await Promise.race([tracked.outputDone, sleep(OUTPUT_DRAIN_MS)])
      tracked.output?.destroy()
      await removeContainer(tracked.container)
      return
    }
    // Not watched by this driver (a server restarted without adopting it): found by its label.
    for (const container of await this.findByInstance(instanceId)) {
      await stopContainer(container, graceMs)
      await removeContainer(container)
    }
  }

  async adopt (instances: RunningInstance[], log: (instanceId: string) => LogSink): Promise<RunningInstance[]> {
    const listed = await this.options.docker.listContainers({ all: true, filters: { label: [`${LABELS.driver}=${DRIVER_LABEL_VALUE}`] } })
    const byInstance = new Map(listed.map((entry) => [entry.Labels[LABELS.instance], entry]))
    const adopted: RunningInstance[] = []
    for (const instance of instances) {
      const known = this.tracked.get(instance.instanceId)
      if (known !== undefined) {
        adopted.push({ ...known.instance })
        continue
      }
      // Only a container this driver made for this very instance is adopted, or removed when it is dead.
      const entry = byInstance.get(instance.instanceId)
      if (entry === undefined) continue
      const container = this.options.docker.getContainer(entry.Id)
      const info = entry.State === 'running' ? await container.inspect() : null
      if (info === null || !info.State.Running) {
        await removeContainer(container)
        continue
      }
      const labels = info.Config.Labels
      const tracked = this.newTracked(
        { ...instance, driver: 'container', host: this.options.publishHost, port: publishedPort(info), handle: info.Id, startedAt: new Date(info.State.StartedAt).toISOString() },
        container, labels[LABELS.healthPath] ?? '/', Number(labels[LABELS.healthTimeoutMs] ?? 30000), log(instance.instanceId)
      )
      tracked.healthyAt = this.options.clock.nowMs()
      await this.follow(tracked)
      this.tracked.set(instance.instanceId, tracked)
      void this.supervise(tracked, this.waitForExit(tracked))
      adopted.push({ ...tracked.instance })
    }
    return adopted
  }

  private newTracked (instance: RunningInstance, container: Docker.Container, healthPath: string, healthTimeoutMs: number, log: LogSink): Tracked {
    return { instance, container, healthPath, healthTimeoutMs, log, stopping: false, watch: new AbortController(), output: null, outputDone: Promise.resolve(), attempt: 0, healthyAt: 0 }
  }

  /** The container behind an instance: the watched one, or one found by label. */
  async containerOf (instanceId: string): Promise<Docker.Container | null> {
    const tracked = this.tracked.get(instanceId)
    if (tracked !== undefined) return tracked.container
    return (await this.findByInstance(instanceId))[0] ?? null
  }

  close (): void {
    for (const tracked of [...this.tracked.values()]) this.forget(tracked)
  }

  private forget (tracked: Tracked): void {
    tracked.watch.abort()
    tracked.output?.destroy()
    if (this.tracked.get(tracked.instance.instanceId) === tracked) this.tracked.delete(tracked.instance.instanceId)
  }

  private async findByInstance (instanceId: string): Promise<Docker.Container[]> {
    const found = await this.options.docker.listContainers({
      all: true,
      filters: { label: [`${LABELS.driver}=${DRIVER_LABEL_VALUE}`, `${LABELS.instance}=${instanceId}`] }
    })
    return found.map((entry) => this.options.docker.getContainer(entry.Id))
  }

  private emit (event: InstanceEvent): void {
    for (const listener of this.listeners) {
      try {
        listener(event)
      } catch {
        // A listener's failure is its own; the others still hear the event.
      }
    }
  }
}

/** The engine's stop: SIGTERM, then SIGKILL after the grace period (whole seconds in the API). */
async function stopContainer (container: Docker.Container, graceMs: number): Promise<void> {
  try {
    await container.stop({ t: Math.ceil(Math.max(graceMs, 0) / 1000) })
  } catch (error) {
    if (!isNotFound(error) && !isNotModified(error)) throw error
  }
}

async function removeContainer (container: Docker.Container): Promise<void> {
  try {
    await container.remove({ force: true })
  } catch (error) {
    if (!isNotFound(error)) throw error
  }
}
