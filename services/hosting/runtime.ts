/**
 * The port every hosting engine implements: turn a source tree into an
 * immutable artifact, then run, watch and stop instances of it. The process
 * driver (child processes under bubblewrap and cgroups) is the embedded
 * default; the container driver speaks the Docker Engine API (Docker or
 * Podman). The orchestration above (deployments on the job queue, the
 * gateway's routes) knows nothing of which one runs.
 */

/** How a source tree is built: a Node app by its package.json, a Procfile, or a directory served as is. */
export type SourceKind = 'node' | 'procfile' | 'static'

export type LogStream = 'stdout' | 'stderr' | 'system'

/** Where a driver writes build and runtime output, one line at a time; the sink masks secret values before keeping them. */
export interface LogSink {
  write: (line: string, stream: LogStream) => void
}

export interface BuildInput {
  /** Builds of one project share a dependency cache; no other project's build reads or writes it. */
  projectId: string
  appId: string
  deploymentId: string
  /** The unpacked source, already narrowed to the app's subdirectory; the driver must not write into it. */
  sourceDir: string
  /** 'auto' detects: package.json → node, Procfile → procfile, an index.html (or a `public`/`dist` folder holding one) → static. */
  kind: SourceKind | 'auto'
  /** Build-time environment: only the secrets the app marked `buildTime`, never its runtime secrets. */
  env: Record<string, string>
  log: LogSink
  /** Aborted when the deployment is canceled: the build stops and `build` rejects with `BuildCanceledError`. */
  signal: AbortSignal
}

/** A built, immutable artifact. Rolling back starts an older one; nothing is rebuilt. */
export interface Artifact {
  id: string
  driver: 'process' | 'container'
  kind: SourceKind
  /** A directory owned by the driver (process, static) or an image id (container). */
  ref: string
  /** The start command for a process or container artifact; null for static. */
  command: string[] | null
  /** sha256 of the source tree the artifact was built from. */
  sourceDigest: string
  sizeBytes: number
  buildSeconds: number
}

export interface InstanceLimits {
  memoryMb: number
  /** CPU share in whole or fractional cores, e.g. 0.5. */
  cpus: number
  pids: number
}

export interface InstanceSpec {
  appId: string
  deploymentId: string
  /** Chosen by the orchestration; unique for the deployment's life. */
  instanceId: string
  artifact: Artifact
  /** The app's environment; the driver adds PORT (and HOST) for the address it allocates. */
  env: Record<string, string>
  limits: InstanceLimits
  /** Asked with GET until it answers below 500; `start` resolves only then. */
  healthCheckPath: string
  /** How long `start` waits for health before it stops the instance and rejects with `InstanceFailedError`. */
  healthTimeoutMs: number
  log: LogSink
}

export interface RunningInstance {
  instanceId: string
  appId: string
  deploymentId: string
  driver: 'process' | 'container'
  /** Where the gateway sends traffic. */
  host: string
  port: number
  /** The OS pid (process driver) or container id (container driver), for re-adoption after a restart. */
  handle: string
  startedAt: string
}

export interface InstanceStats {
  cpuSeconds: number
  memoryBytes: number
}

/** What a driver reports about instances after `start` resolved; the meaning and timing are `supervision.ts`'s, the same for every driver. */
export type InstanceEvent =
  | { type: 'crashed', instanceId: string, reason: string, exitCode: number | null, signal: string | null }
  | { type: 'restarted', instanceId: string, attempt: number, instance: RunningInstance }
  | { type: 'gave-up', instanceId: string, reason: string, attempts: number }

export interface RuntimeDriver {
  readonly name: 'process' | 'container'
  /** Why the host falls short of full isolation (no bubblewrap, no writable cgroup), or null; logged at start and shown in the app's timeline. */
  readonly degradedReason: string | null
  build: (input: BuildInput) => Promise<Artifact>
  /** Starts one instance and resolves once it is healthy; rejects with `InstanceFailedError` (its reason says why: exited with code N, unhealthy after T ms). */
  start: (spec: InstanceSpec) => Promise<RunningInstance>
  /** SIGTERM (or the engine's stop), then SIGKILL after `graceMs`; resolves when the instance is gone. Unknown ids resolve. */
  stop: (instanceId: string, graceMs: number) => Promise<void>
  /** After a server restart: re-attach to instances that still run (returned), forget the rest. */
  adopt: (instances: RunningInstance[], log: (instanceId: string) => LogSink) => Promise<RunningInstance[]>
  stats: (instanceId: string) => Promise<InstanceStats | null>
  /** Crash, restart-with-backoff and give-up reports. */
  onEvent: (listener: (event: InstanceEvent) => void) => void
  /** Removes an artifact no deployment keeps. */
  discard: (artifact: Artifact) => Promise<void>
  /** Empties a project's build cache, when the project goes. */
  discardBuildCache: (projectId: string) => Promise<void>
  /** Stops watching; running instances are left running so a restarted server can adopt them. */
  close: () => Promise<void>
}

export class BuildFailedError extends Error {
  constructor (readonly reason: string) { super(reason) }
}

export class BuildCanceledError extends Error {
  constructor () { super('The build was canceled') }
}

export class InstanceFailedError extends Error {
  /** How the instance's process ended, when it ended before becoming healthy. */
  constructor (readonly reason: string, readonly exitCode: number | null = null, readonly signal: string | null = null) { super(reason) }
}
