import { constants } from 'node:os'
import type { Readable } from 'node:stream'
import { setTimeout as sleep } from 'node:timers/promises'
import type Docker from 'dockerode'
import type { Clock } from '../../platform/clock.js'
import { InstanceFailedError, type InstanceEvent, type InstanceSpec, type LogSink, type RunningInstance } from '../runtime.js'
import { isHealthPath, probeHealth } from '../health-probe.js'
import { exitReason, InstanceEvents, RestartBackoff, type RestartPolicy } from '../supervision.js'
import { DRIVER_LABEL_VALUE, errorMessage, isNotFound, isNotModified, LABELS } from './engine.js'
import { readContainerOutput } from './output.js'
import type { InstanceNetwork, InstanceNetworks } from '../network/namespaces.js'
import { INSTANCE_PORT, SLIRP } from '../network/plan.js'

/**
 * Containers as instances: created with the app's environment and limits,
 * each in a network namespace of its own that the gateway reaches over its
 * link (Podman joins a namespace by path), or, where that cannot be, with
 * its port published on the host's loopback; health-checked from the host,
 * then watched. The engine's restart policy is off on purpose: this driver
 * restarts with backoff and reports every crash, as the process driver does.
 */

/** The port an app listens on inside its container; published, the engine picks the host side. */
export const CONTAINER_PORT = INSTANCE_PORT
const HEALTH_INTERVAL_MS = 200
const PROBE_TIMEOUT_MS = 2000
const OUTPUT_DRAIN_MS = 2000
const SWEEP_MIN_AGE_MS = 120_000

export interface InstancesOptions {
  docker: Docker
  clock: Clock
  /** The host address ports are published on and probed at, for containers on the engine's own network. */
  publishHost: string
  restart: RestartPolicy
  /** Namespaces for instances, where this host makes them and the engine joins them; null publishes ports instead. */
  networks: () => Promise<InstanceNetworks | null>
  /** Namespaces a sweep leaves although no instance owns them: those of the builds running now. */
  keepNetwork: (name: string) => boolean
  /** This driver's scope: a label on its containers, so a restarted server sweeps only its own. */
  scope: string
}

interface Exit { reason: string, exitCode: number | null, signal: string | null }

class LaunchFailure extends InstanceFailedError {
  constructor (readonly exit: Exit) { super(exit.reason) }
}

/** Wrapped so that returning it from an async function does not wait for the exit. */
interface Launched { exit: Promise<Exit | null> }

interface Tracked {
  instance: RunningInstance
  network: InstanceNetwork | null
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
  backoff: RestartBackoff
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
  if (signal !== null) return { reason: exitReason(null, signal), exitCode: null, signal }
  return { reason: exitReason(statusCode, null), exitCode: statusCode, signal: null }
}

function publishedPort (info: Docker.ContainerInspectInfo): number {
  const binding = info.NetworkSettings.Ports?.[`${CONTAINER_PORT}/tcp`]?.[0]
  const port = Number(binding?.HostPort)
  if (!Number.isInteger(port) || port <= 0) throw new InstanceFailedError('the engine published no port for the instance')
  return port
}

export class ContainerInstances {
  private readonly tracked = new Map<string, Tracked>()
  private readonly events = new InstanceEvents()

  constructor (private readonly options: InstancesOptions) {}

  onEvent (listener: (event: InstanceEvent) => void): void {
    this.events.on(listener)
  }

  async start (spec: InstanceSpec): Promise<RunningInstance> {
    if (spec.artifact.driver !== 'container' || spec.artifact.kind === 'static' || spec.artifact.command === null) {
      throw new InstanceFailedError('this artifact is not a container image (static sites are served by the gateway)')
    }
    if (!isHealthPath(spec.healthCheckPath)) throw new InstanceFailedError('the health check path must be a URL path starting with /')
    const env = { ...spec.env, PORT: String(CONTAINER_PORT), HOST: '0.0.0.0', PLINTH_INSTANCE_ID: spec.instanceId }
    const networks = await this.options.networks()
    const network = networks === null ? null : await networks.open(spec.instanceId, { inbound: true }).catch((error: Error) => { throw new InstanceFailedError(error.message) })
    const closeNetwork = async (): Promise<void> => { if (network !== null) await networks?.close(spec.instanceId) }
    const ports = network === null
      ? { ExposedPorts: { [`${CONTAINER_PORT}/tcp`]: {} } }
      : {}
    const networking = network === null
      ? { PortBindings: { [`${CONTAINER_PORT}/tcp`]: [{ HostIp: this.options.publishHost, HostPort: '' }] } }
      : { NetworkMode: `ns:${network.path}`, Dns: [SLIRP.dns] }
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
        [LABELS.healthTimeoutMs]: String(spec.healthTimeoutMs),
        [LABELS.scope]: this.options.scope
      },
      ...ports,
      HostConfig: {
        // A small init as PID 1 passes signals on and reaps, so an app's own SIGTERM handling works.
        Init: true,
        Memory: spec.limits.memoryMb * 1048576,
        MemorySwap: spec.limits.memoryMb * 1048576,
        NanoCpus: Math.round(spec.limits.cpus * 1e9),
        PidsLimit: spec.limits.pids,
        RestartPolicy: { Name: 'no' },
        ...networking
      }
    }).catch(async (error: unknown) => {
      await closeNetwork()
      throw new InstanceFailedError(`the engine refused the instance: ${errorMessage(error)}`)
    })
    const tracked = this.newTracked(
      { instanceId: spec.instanceId, appId: spec.appId, deploymentId: spec.deploymentId, driver: 'container', host: network?.address ?? this.options.publishHost, port: network?.port ?? 0, handle: container.id, startedAt: this.options.clock.now().toISOString() },
      container, spec.healthCheckPath, spec.healthTimeoutMs, spec.log, network
    )
    this.tracked.set(spec.instanceId, tracked)
    let launched: Launched
    try {
      launched = await this.launch(tracked)
    } catch (error) {
      this.forget(tracked)
      await removeContainer(container)
      await closeNetwork()
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
    if (tracked.network === null) tracked.instance.port = publishedPort(await tracked.container.inspect())
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
      const answer = await probeHealth(tracked.instance.host, tracked.instance.port, tracked.healthPath, PROBE_TIMEOUT_MS, tracked.watch.signal)
      if (tracked.watch.signal.aborted) throw new InstanceFailedError('stopped before it became healthy')
      if (gone) {
        // Its last words (why it exited) are worth the short wait for the output's end.
        await Promise.race([tracked.outputDone, sleep(OUTPUT_DRAIN_MS)])
        throw new LaunchFailure(exited ?? { reason: 'stopped before it became healthy', exitCode: null, signal: null })
      }
      if ('status' in answer && answer.status < 500) return
      if (this.options.clock.nowMs() - startedAt >= tracked.healthTimeoutMs) {
        throw new LaunchFailure({ reason: `unhealthy after ${tracked.healthTimeoutMs} ms`, exitCode: null, signal: null })
      }
      await sleep(HEALTH_INTERVAL_MS, undefined, { signal: tracked.watch.signal }).catch(() => undefined)
    }
  }

  private async supervise (tracked: Tracked, firstExit: Promise<Exit | null>): Promise<void> {
    const { clock } = this.options
    let exit = await firstExit
    let ranHealthy = true
    while (exit !== null && !tracked.stopping) {
      this.emit({ type: 'crashed', instanceId: tracked.instance.instanceId, reason: exit.reason, exitCode: exit.exitCode, signal: exit.signal })
      tracked.log.write(`Instance ${exit.reason}`, 'system')
      if (ranHealthy) tracked.backoff.healthyRunEnded(clock.nowMs() - tracked.healthyAt)
      const delay = tracked.backoff.nextDelayMs()
      if (delay === null) {
        const reason = tracked.backoff.gaveUpReason(exit.reason)
        tracked.log.write(`Instance ${reason}`, 'system')
        this.forget(tracked)
        await removeContainer(tracked.container)
        await this.closeNetwork(tracked)
        this.emit({ type: 'gave-up', instanceId: tracked.instance.instanceId, reason, attempts: tracked.backoff.attempts })
        return
      }
      const slept = await sleep(delay, true, { signal: tracked.watch.signal }).catch(() => false)
      if (!slept || tracked.stopping) return
      try {
        const next = await this.launch(tracked)
        ranHealthy = true
        this.emit({ type: 'restarted', instanceId: tracked.instance.instanceId, attempt: tracked.backoff.attempts, instance: { ...tracked.instance } })
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
      await this.closeNetwork(tracked)
      return
    }
    // Not watched by this driver (a server restarted without adopting it): found by its label.
    for (const container of await this.findByInstance(instanceId)) {
      await stopContainer(container, graceMs)
      await removeContainer(container)
    }
    await (await this.options.networks())?.close(instanceId)
  }

  private async closeNetwork (tracked: Tracked): Promise<void> {
    if (tracked.network !== null) await (await this.options.networks())?.close(tracked.instance.instanceId)
  }

  async adopt (instances: RunningInstance[], log: (instanceId: string) => LogSink): Promise<RunningInstance[]> {
    const listed = await this.options.docker.listContainers({ all: true, filters: { label: [`${LABELS.driver}=${DRIVER_LABEL_VALUE}`] } })
    const byInstance = new Map(listed.map((entry) => [entry.Labels[LABELS.instance], entry]))
    const networks = await this.options.networks()
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
      const joined = info?.HostConfig.NetworkMode?.startsWith('ns:') === true
      const network = joined ? await networks?.find(instance.instanceId) ?? null : null
      if (info === null || !info.State.Running || joined !== (network !== null)) {
        await removeContainer(container)
        await networks?.close(instance.instanceId)
        continue
      }
      const labels = info.Config.Labels
      const tracked = this.newTracked(
        { ...instance, driver: 'container', host: network?.address ?? this.options.publishHost, port: network?.port ?? publishedPort(info), handle: info.Id, startedAt: new Date(info.State.StartedAt).toISOString() },
        container, labels[LABELS.healthPath] ?? '/', Number(labels[LABELS.healthTimeoutMs] ?? 30000), log(instance.instanceId), network
      )
      tracked.healthyAt = this.options.clock.nowMs()
      await this.follow(tracked)
      this.tracked.set(instance.instanceId, tracked)
      void this.supervise(tracked, this.waitForExit(tracked))
      adopted.push({ ...tracked.instance })
    }
    await this.sweep(listed, networks)
    return adopted
  }

  /**
   * Removes this driver's containers and namespaces that no watched instance
   * or running build owns: what a server left behind for apps since gone, and
   * for the builds it was running. A container younger than
   * `SWEEP_MIN_AGE_MS` is left for the next start: another node on the same
   * engine may be starting it and not have recorded it yet.
   */
  private async sweep (listed: Docker.ContainerInfo[], networks: InstanceNetworks | null): Promise<void> {
    const bornBefore = (this.options.clock.nowMs() - SWEEP_MIN_AGE_MS) / 1000
    for (const entry of listed) {
      if (entry.Labels[LABELS.scope] !== this.options.scope || this.tracked.has(entry.Labels[LABELS.instance]) || entry.Created > bornBefore) continue
      await removeContainer(this.options.docker.getContainer(entry.Id))
    }
    const young = new Set(listed.filter((entry) => entry.Created > bornBefore).map((entry) => entry.Labels[LABELS.instance]))
    await networks?.sweep((name) => this.tracked.has(name) || young.has(name) || this.options.keepNetwork(name))
  }

  private newTracked (instance: RunningInstance, container: Docker.Container, healthPath: string, healthTimeoutMs: number, log: LogSink, network: InstanceNetwork | null): Tracked {
    return { instance, network, container, healthPath, healthTimeoutMs, log, stopping: false, watch: new AbortController(), output: null, outputDone: Promise.resolve(), backoff: new RestartBackoff(this.options.restart), healthyAt: 0 }
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
    this.events.emit(event)
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
