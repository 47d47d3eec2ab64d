import type { Clock } from '../../platform/clock.js'
import { systemClock } from '../../platform/clock.js'
import { createIdGenerator } from '../../platform/ids.js'
import type { Artifact, BuildInput, InstanceEvent, InstanceSpec, InstanceStats, LogSink, RunningInstance, RuntimeDriver } from '../runtime.js'
import { ImageBuilder } from './build.js'
import { connectEngine } from './engine.js'
import { DEFAULT_RESTART_POLICY, type RestartPolicy } from '../supervision.js'
import { ContainerInstances } from './instances.js'
import { sampleStats } from './stats.js'
import { InstanceNetworks, probeNetwork, scopeOf } from '../network/namespaces.js'
import type { Ipv4Range } from '../network/plan.js'

export interface ContainerDriverOptions {
  /** The engine's Unix socket (HOSTING_DOCKER_SOCKET): Docker's, or `podman system service`'s. */
  socketPath: string
  /** The image apps build on (HOSTING_BASE_IMAGE): Node and npm on a shell, e.g. `node:20-slim`. */
  baseImage: string
  /** Where static artifacts, which are directories and not images, are kept. */
  artifactsDir: string
  /** The host address instance ports are published on; loopback unless the gateway runs elsewhere. */
  publishHost?: string
  /** Overrides of `DEFAULT_RESTART_POLICY`, as the process driver takes them. */
  restart?: Partial<RestartPolicy>
  clock?: Clock
  newId?: () => string
  /** Internal IPv4 ranges instances may reach from their namespaces (HOSTING_APP_ALLOWED_RANGES); null gives them none of their own and publishes their ports. */
  allowedRanges?: Ipv4Range[] | null
}

// One line of configuration reaches the Dockerfile's FROM: a reference, never anything a line could hold.
const IMAGE_REFERENCE = /^[A-Za-z0-9][A-Za-z0-9._/:@-]*$/

/** The hosting engine over the Docker Engine API: apps built into images, instances run as containers. */
export class ContainerDriver implements RuntimeDriver {
  readonly name = 'container' as const
  private readonly builder: ImageBuilder
  private readonly instances: ContainerInstances
  private missing: string | null
  private networks: Promise<InstanceNetworks | null> | null = null

  /** Why instances (and builds) share the engine's network instead of a namespace each: known at once for the host, after the first look at the engine for the engine. */
  get degradedReason (): string | null {
    return this.missing
  }

  constructor (options: ContainerDriverOptions) {
    if (!IMAGE_REFERENCE.test(options.baseImage)) throw new Error(`Not an image reference: ${JSON.stringify(options.baseImage)}`)
    const docker = connectEngine(options.socketPath)
    const clock = options.clock ?? systemClock
    const host = options.allowedRanges === null ? { missing: 'network namespaces are turned off' } : probeNetwork(options.allowedRanges ?? [])
    this.missing = 'missing' in host ? `${host.missing}: instances share the engine's network, their ports published on the host` : null
    // Only Podman joins a namespace by path; another engine's instances keep its network, and the reason says so.
    const networks = async (): Promise<InstanceNetworks | null> => {
      if ('missing' in host) return null
      this.networks ??= docker.version().then((version) => {
        if ((version.Components ?? []).some((component) => /podman/i.test(component.Name))) return new InstanceNetworks(host, scopeOf(options.artifactsDir))
        this.missing = 'the engine is not Podman, which alone joins a network namespace by path: instances share the engine\'s network, their ports published on the host'
        return null
      }, () => { this.networks = null; return null })
      return await this.networks
    }
    // Builds get outbound-only namespaces from the same place, so their steps reach what an instance reaches and no more.
    const builder = new ImageBuilder({ docker, baseImage: options.baseImage, artifactsDir: options.artifactsDir, newId: options.newId ?? createIdGenerator(), clock, networks })
    this.builder = builder
    this.instances = new ContainerInstances({
      docker,
      clock,
      publishHost: options.publishHost ?? '127.0.0.1',
      restart: { ...DEFAULT_RESTART_POLICY, ...options.restart },
      networks,
      keepNetwork: (name) => builder.holdsNetwork(name),
      scope: scopeOf(options.artifactsDir)
    })
  }

  async build (input: BuildInput): Promise<Artifact> {
    return await this.builder.build(input)
  }

  async start (spec: InstanceSpec): Promise<RunningInstance> {
    return await this.instances.start(spec)
  }

  async stop (instanceId: string, graceMs: number): Promise<void> {
    await this.instances.stop(instanceId, graceMs)
  }

  async adopt (instances: RunningInstance[], log: (instanceId: string) => LogSink): Promise<RunningInstance[]> {
    return await this.instances.adopt(instances, log)
  }

  async stats (instanceId: string): Promise<InstanceStats | null> {
    const container = await this.instances.containerOf(instanceId)
    return container === null ? null : await sampleStats(container)
  }

  onEvent (listener: (event: InstanceEvent) => void): void {
    this.instances.onEvent(listener)
  }

  async discard (artifact: Artifact): Promise<void> {
    await this.builder.discard(artifact)
  }

  async discardBuildCache (projectId: string): Promise<void> {
    await this.builder.discardCache(projectId)
  }

  async close (): Promise<void> {
    this.instances.close()
    await (await this.networks)?.release()
  }
}
