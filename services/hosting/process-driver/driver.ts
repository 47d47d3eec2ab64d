import { chmodSync, mkdirSync, rmSync } from 'node:fs'
import { rm } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import type { Clock } from '../../platform/clock.js'
import { createIdGenerator, type IdGenerator } from '../../platform/ids.js'
import type { Artifact, BuildInput, InstanceEvent, InstanceLimits, InstanceSpec, InstanceStats, LogSink, RunningInstance, RuntimeDriver } from '../runtime.js'
import { buildArtifact, projectCachePath, type BuildContext } from './build.js'
import { PortAllocator } from './ports.js'
import { removeScope } from './cgroups.js'
import { reachableBy, sandboxFor, type SandboxHost } from './sandbox.js'
import { DEFAULT_RESTART_POLICY, type RestartPolicy } from '../supervision.js'
import { Supervisor, type SupervisorTiming } from './supervisor.js'

export interface ProcessDriverOptions {
  /** The driver's own directory, e.g. `<DATA_DIR>/hosting`: artifacts, instance logs and state, the projects' npm caches. */
  root: string
  clock: Clock
  /** What `probeSandbox()` found on this host. */
  sandbox: SandboxHost
  newId?: IdGenerator
  /** Hidden from every sandbox besides `root` (e.g. DATA_DIR, which holds every project's data). */
  hiddenPaths?: string[]
  /** Limits for build steps. */
  buildLimits?: InstanceLimits
  restart?: Partial<RestartPolicy>
  timing?: Partial<SupervisorTiming & { healthPollMs: number }>
  /** PATH for builds and instances whose environment sets none; default node's own directory and the system's, never the server's PATH. */
  path?: string
}

export const DEFAULT_BUILD_LIMITS: InstanceLimits = { memoryMb: 2048, cpus: 1, pids: 1024 }

/** What a sandboxed app finds on its PATH: the runtime it was built for (node, npm) and the system's programs. */
export function sandboxPath (): string {
  return [...new Set([dirname(process.execPath), '/usr/local/bin', '/usr/bin', '/bin'])].join(':')
}

/**
 * The embedded hosting engine: builds into driver-owned artifact directories
 * and runs each instance as a sandboxed child process on a loopback port.
 */
export class ProcessDriver implements RuntimeDriver {
  readonly name = 'process' as const
  readonly degradedReason: string | null
  private readonly artifactsDir: string
  private readonly npmCachesDir: string
  private readonly buildContext: BuildContext
  private readonly supervisor: Supervisor
  private readonly sandbox: SandboxHost
  /** Builds under way, whose cgroups and namespaces a sweep leaves alone. */
  private building = 0

  constructor (options: ProcessDriverOptions) {
    this.artifactsDir = join(options.root, 'artifacts')
    const instancesDir = join(options.root, 'instances')
    this.npmCachesDir = join(options.root, 'npm-caches')
    // The one cache every build shared before caches were per project: any build could plant packages in it.
    rmSync(join(options.root, 'npm-cache'), { recursive: true, force: true })
    // Searchable but not listable by the sandbox user, who is given its own artifact's and project cache's paths and no other.
    for (const dir of [options.root, this.artifactsDir, instancesDir, this.npmCachesDir]) { mkdirSync(dir, { recursive: true }); chmodSync(dir, 0o711) }
    const sandbox = sandboxFor(options.sandbox, options.root)
    this.sandbox = sandbox
    this.degradedReason = sandbox.degradedReason
    const hidden = reachableBy(sandbox.user, [options.root, ...(options.hiddenPaths ?? [])])
    const path = options.path ?? sandboxPath()
    this.buildContext = {
      artifactsDir: this.artifactsDir,
      npmCachesDir: this.npmCachesDir,
      sandbox,
      hidden,
      limits: options.buildLimits ?? DEFAULT_BUILD_LIMITS,
      clock: options.clock,
      newId: options.newId ?? createIdGenerator(() => options.clock.nowMs()),
      path
    }
    this.supervisor = new Supervisor(
      { artifactsDir: this.artifactsDir, instancesDir, sandbox, hidden, ports: new PortAllocator(), networks: sandbox.networks, clock: options.clock, path, healthPollMs: options.timing?.healthPollMs ?? 100 },
      { ...DEFAULT_RESTART_POLICY, ...options.restart },
      { logPollMs: options.timing?.logPollMs ?? 250, livenessPollMs: options.timing?.livenessPollMs ?? 1000, logFileMaxBytes: options.timing?.logFileMaxBytes ?? 64 * 1024 * 1024 }
    )
  }

  async build (input: BuildInput): Promise<Artifact> {
    this.building++
    try {
      return await buildArtifact(this.buildContext, input)
    } finally {
      this.building--
    }
  }

  async start (spec: InstanceSpec): Promise<RunningInstance> {
    return await this.supervisor.start(spec)
  }

  async stop (instanceId: string, graceMs: number): Promise<void> {
    await this.supervisor.stop(instanceId, graceMs)
  }

  /** Adopts what still runs of `instances`, then kills whatever else of this driver a previous server left running. */
  async adopt (instances: RunningInstance[], log: (instanceId: string) => LogSink): Promise<RunningInstance[]> {
    const adopted = await this.supervisor.adopt(instances, log)
    await this.supervisor.sweep({ builds: this.building === 0 })
    return adopted
  }

  async stats (instanceId: string): Promise<InstanceStats | null> {
    return await this.supervisor.stats(instanceId)
  }

  onEvent (listener: (event: InstanceEvent) => void): void {
    this.supervisor.onEvent(listener)
  }

  async discard (artifact: Artifact): Promise<void> {
    // The directory is derived from the id, never taken from `ref`, so a forged artifact cannot name another path.
    if (artifact.driver !== 'process' || !/^[A-Za-z0-9_-]+$/.test(artifact.id)) return
    await rm(join(this.artifactsDir, artifact.id), { recursive: true, force: true })
  }

  async discardBuildCache (projectId: string): Promise<void> {
    const dir = projectCachePath(this.npmCachesDir, projectId)
    if (dir !== null) await rm(dir, { recursive: true, force: true })
  }

  async close (): Promise<void> {
    await this.supervisor.close()
    if (this.sandbox.cgroups !== null) await removeScope(this.sandbox.cgroups)
    await this.sandbox.networks?.release()
  }
}
