import type { Clock } from '../../clock.js'
import { systemClock } from '../../clock.js'
import { createIdGenerator } from '../../ids.js'
import type { Artifact, BuildInput, InstanceEvent, InstanceSpec, InstanceStats, LogSink, RunningInstance, RuntimeDriver } from '../runtime.js'
import { ImageBuilder } from './build.js'
import { connectEngine } from './engine.js'
import { DEFAULT_RESTART_POLICY, type RestartPolicy } from '../supervision.js'
import { ContainerInstances } from './instances.js'
import { sampleStats } from './stats.js'

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
}

// One line of configuration reaches the Dockerfile's FROM: a reference, never anything a line could hold.
const IMAGE_REFERENCE = /^[A-Za-z0-9][A-Za-z0-9._/:@-]*$/

/** The hosting engine over the Docker Engine API: apps built into images, instances run as containers. */
export class ContainerDriver implements RuntimeDriver {
  readonly name = 'container' as const
  readonly degradedReason = null
  private readonly builder: ImageBuilder
  private readonly instances: ContainerInstances

  constructor (options: ContainerDriverOptions) {
    if (!IMAGE_REFERENCE.test(options.baseImage)) throw new Error(`Not an image reference: ${JSON.stringify(options.baseImage)}`)
    const docker = connectEngine(options.socketPath)
    const clock = options.clock ?? systemClock
    this.builder = new ImageBuilder({ docker, baseImage: options.baseImage, artifactsDir: options.artifactsDir, newId: options.newId ?? createIdGenerator(), clock })
    this.instances = new ContainerInstances({
      docker,
      clock,
      publishHost: options.publishHost ?? '127.0.0.1',
      restart: { ...DEFAULT_RESTART_POLICY, ...options.restart }
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
  }
}
