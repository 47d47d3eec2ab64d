import type { ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { setTimeout as sleep } from 'node:timers/promises'
import { join } from 'node:path'
import { InstanceFailedError, type InstanceEvent, type InstanceSpec, type InstanceStats, type LogSink, type RunningInstance } from '../runtime.js'
import { isHealthPath } from '../health-probe.js'
import { exitReason, InstanceEvents, RestartBackoff, type RestartPolicy } from '../supervision.js'
import { Cgroup, listGroups } from './cgroups.js'
import { cgroupOf, hostPort, launchInstance, logFiles, type LaunchContext, type Launched, type StoredSpec } from './launch.js'
import { LogTail } from './log-tail.js'
import { carriesMarker, isAlive, processStats, readEnviron, terminateInstance } from './process-tree.js'
import type { InstanceNetwork } from '../network/namespaces.js'

export interface SupervisorTiming {
  logPollMs: number
  /** How often an adopted instance, not this server's child, is checked for life. */
  livenessPollMs: number
  /** An instance's stdout or stderr file is emptied once followed past this size. */
  logFileMaxBytes: number
}

interface Supervised {
  spec: StoredSpec
  env: Record<string, string>
  log: LogSink
  running: RunningInstance
  cgroup: Cgroup | null
  /** Its network namespace, kept across restarts; null on the host's network. */
  network: InstanceNetwork | null
  child: ChildProcess | null
  liveness: NodeJS.Timeout | null
  tails: LogTail[]
  backoff: RestartBackoff
  upSinceMs: number
  restartTimer: NodeJS.Timeout | null
  restarting: Promise<void> | null
  /** The crash being handled (leftovers killed, restart scheduled), awaited by stop and close. */
  crashing: Promise<void> | null
  stopping: boolean
}

const INSTANCE_ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/
const KILL_ROUNDS = 100
const KILL_WAIT_MS = 50

/** Whether a process lives; when /proc cannot be read now, `unknown` is the answer given. */
function alive (pid: number, unknown = true): boolean {
  try {
    return isAlive(pid)
  } catch {
    return unknown
  }
}

/** SIGKILL to whatever a left-over group holds until it is empty, then the group goes. */
async function killGroup (cgroup: Cgroup): Promise<void> {
  for (let round = 0; round < KILL_ROUNDS; round++) {
    const members = await cgroup.members()
    if (members.length === 0) break
    for (const pid of members) { try { process.kill(pid, 'SIGKILL') } catch { /* gone meanwhile */ } }
    await sleep(KILL_WAIT_MS)
  }
  await cgroup.remove()
}

/**
 * The instances this server watches: each one's processes, log tails and
 * restart state. A crash after health is reported, then restarted with
 * exponential backoff until the policy gives up.
 */
export class Supervisor {
  private readonly instances = new Map<string, Supervised>()
  private readonly starting = new Map<string, Promise<RunningInstance>>()
  private readonly events = new InstanceEvents()
  private closed = false

  constructor (private readonly context: LaunchContext & { artifactsDir: string }, private readonly policy: RestartPolicy, private readonly timing: SupervisorTiming) {}

  onEvent (listener: (event: InstanceEvent) => void): void {
    this.events.on(listener)
  }

  async start (spec: InstanceSpec): Promise<RunningInstance> {
    this.check(spec)
    const starting = this.launchFirst(spec)
    this.starting.set(spec.instanceId, starting)
    try {
      return await starting
    } finally {
      this.starting.delete(spec.instanceId)
    }
  }

  private async launchFirst (spec: InstanceSpec): Promise<RunningInstance> {
    const { env, log, ...kept } = spec
    const stored: StoredSpec = { ...kept, envKeys: Object.keys(env) }
    const dir = join(this.context.instancesDir, spec.instanceId)
    await mkdir(dir, { recursive: true })
    await writeFile(join(dir, 'spec.json'), JSON.stringify(stored))
    const tails = await this.follow(spec.instanceId, spec.log, null)
    let launched: Launched
    let network: InstanceNetwork | null = null
    try {
      if (this.context.networks !== null) {
        network = await this.context.networks.open(spec.instanceId, { inbound: true }).catch((error: Error) => { throw new InstanceFailedError(`could not start: ${error.message}`) })
      }
      launched = await launchInstance(this.context, stored, spec.env, network)
    } catch (error) {
      for (const tail of tails) await tail.stop()
      if (network !== null) await this.context.networks?.close(spec.instanceId).catch(() => {})
      await rm(dir, { recursive: true, force: true })
      throw error
    }
    const supervised = this.supervised({ spec: stored, env: spec.env, log: spec.log, running: launched.running, cgroup: launched.cgroup, network, tails })
    this.instances.set(spec.instanceId, supervised)
    this.watch(supervised, launched.child)
    return launched.running
  }

  async stop (instanceId: string, graceMs: number): Promise<void> {
    // A stop that arrives while the instance is still starting applies once the start settles.
    await this.starting.get(instanceId)?.catch(() => {})
    const supervised = this.instances.get(instanceId)
    if (supervised === undefined) return
    supervised.stopping = true
    await supervised.crashing
    if (supervised.restartTimer !== null) clearTimeout(supervised.restartTimer)
    await supervised.restarting
    this.unwatch(supervised)
    await terminateInstance(Number(supervised.running.handle), instanceId, supervised.cgroup, graceMs)
    await this.forget(supervised)
  }

  async adopt (instances: RunningInstance[], log: (instanceId: string) => LogSink): Promise<RunningInstance[]> {
    const adopted: RunningInstance[] = []
    for (const running of instances) {
      if (running.driver !== 'process' || !INSTANCE_ID.test(running.instanceId)) continue
      const known = this.instances.get(running.instanceId)
      if (known !== undefined) { adopted.push(known.running); continue }
      const dir = join(this.context.instancesDir, running.instanceId)
      const pgid = Number(running.handle)
      const cgroup = cgroupOf(this.context.sandbox, running.instanceId)
      const stored = await readFile(join(dir, 'spec.json'), 'utf8').then(text => JSON.parse(text) as StoredSpec, () => null)
      const environ = Number.isInteger(pgid) && pgid > 1 && isAlive(pgid) && carriesMarker(pgid, running.instanceId) ? readEnviron(pgid) : null
      const network = this.context.networks === null ? null : await this.context.networks.find(running.instanceId)
      const reachable = this.context.networks === null ? running.host === '127.0.0.1' : network !== null && network.address === running.host
      if (stored === null || environ === null || !reachable) {
        // Not ours, or gone: clear what may be left of it so the orchestration can start it afresh.
        if (Number.isInteger(pgid) && pgid > 1) await terminateInstance(pgid, running.instanceId, cgroup, 0)
        await cgroup?.remove()
        await this.context.networks?.close(running.instanceId)
        await rm(dir, { recursive: true, force: true })
        continue
      }
      const sink = log(running.instanceId)
      const offsets = await readFile(join(dir, 'log-offsets.json'), 'utf8').then(text => JSON.parse(text) as Record<string, number>, () => null)
      const env = Object.fromEntries(stored.envKeys.filter(key => key in environ).map(key => [key, environ[key]]))
      const tails = await this.follow(running.instanceId, sink, offsets)
      const supervised = this.supervised({ spec: stored, env, log: sink, running, cgroup, network, tails })
      const port = hostPort(running)
      if (port !== null) this.context.ports.reserve(port)
      this.instances.set(running.instanceId, supervised)
      this.watch(supervised, null)
      adopted.push(running)
    }
    return adopted
  }

  /**
   * Kills and removes what this driver's scope holds that no supervised or
   * starting instance owns: instances a crashed server left whose apps are
   * gone (their cgroups, namespaces and state), and, when no build runs here,
   * the leftovers of builds it was running.
   */
  async sweep (options: { builds: boolean }): Promise<void> {
    const known = (instanceId: string): boolean => this.instances.has(instanceId) || this.starting.has(instanceId)
    const cgroups = this.context.sandbox.cgroups
    if (cgroups !== null) {
      for (const name of await listGroups(cgroups)) {
        const instanceId = /^instance-(.+)$/.exec(name)?.[1] ?? null
        if (instanceId !== null ? known(instanceId) : !(options.builds && name.startsWith('build-'))) continue
        await killGroup(Cgroup.at(cgroups, name))
      }
    }
    await this.context.networks?.sweep((name) => name.startsWith('step-') ? !options.builds : known(name))
    for (const instanceId of await readdir(this.context.instancesDir).catch(() => [] as string[])) {
      if (!known(instanceId)) await rm(join(this.context.instancesDir, instanceId), { recursive: true, force: true })
    }
  }

  async stats (instanceId: string): Promise<InstanceStats | null> {
    const supervised = this.instances.get(instanceId)
    if (supervised === undefined) return null
    if (supervised.cgroup !== null) return await supervised.cgroup.stats()
    return await processStats(Number(supervised.running.handle), instanceId)
  }

  /** Stops watching and saves where each log was read to; the instances keep running for the next server. */
  async close (): Promise<void> {
    this.closed = true
    for (const supervised of this.instances.values()) {
      await supervised.crashing
      if (supervised.restartTimer !== null) clearTimeout(supervised.restartTimer)
      await supervised.restarting
      // Crashed and not restarted: nothing of it runs, so its group goes now.
      if (!alive(Number(supervised.running.handle))) await supervised.cgroup?.remove()
      this.unwatch(supervised)
      supervised.child?.unref()
      for (const tail of supervised.tails) tail.pause()
      const [stdout, stderr] = supervised.tails
      const dir = join(this.context.instancesDir, supervised.running.instanceId)
      if (existsSync(dir)) await writeFile(join(dir, 'log-offsets.json'), JSON.stringify({ stdout: stdout.resumeOffset, stderr: stderr.resumeOffset }))
    }
    this.instances.clear()
  }

  private supervised (fields: Pick<Supervised, 'spec' | 'env' | 'log' | 'running' | 'cgroup' | 'network' | 'tails'>): Supervised {
    return { ...fields, child: null, liveness: null, backoff: new RestartBackoff(this.policy), upSinceMs: this.context.clock.nowMs(), restartTimer: null, restarting: null, crashing: null, stopping: false }
  }

  private check (spec: InstanceSpec): void {
    if (!INSTANCE_ID.test(spec.instanceId)) throw new InstanceFailedError('the instance id must be 1 to 64 letters, digits, - or _')
    if (!isHealthPath(spec.healthCheckPath)) throw new InstanceFailedError('the health check path must be a URL path starting with /')
    if (this.instances.has(spec.instanceId) || this.starting.has(spec.instanceId)) throw new InstanceFailedError(`instance ${spec.instanceId} is already running`)
    const { artifact } = spec
    if (artifact.driver !== 'process' || artifact.command === null) throw new InstanceFailedError('this artifact is not a runnable process artifact')
    if (!artifact.ref.startsWith(join(this.context.artifactsDir, artifact.id) + '/') || !existsSync(artifact.ref)) {
      throw new InstanceFailedError(`artifact ${artifact.id} is not on this host`)
    }
  }

  private async follow (instanceId: string, sink: LogSink, offsets: Record<string, number> | null): Promise<LogTail[]> {
    const files = logFiles(this.context.instancesDir, instanceId)
    const tails: LogTail[] = []
    for (const stream of ['stdout', 'stderr'] as const) {
      const from = offsets?.[stream] ?? await stat(files[stream]).then(s => s.size, () => 0)
      const tail = new LogTail(files[stream], stream, sink, from, this.timing.logFileMaxBytes)
      tail.start(this.timing.logPollMs)
      tails.push(tail)
    }
    return tails
  }

  private watch (supervised: Supervised, child: ChildProcess | null): void {
    const pgid = Number(supervised.running.handle)
    supervised.child = child
    if (child !== null) {
      // It may have exited between answering its health check and being watched.
      if (child.exitCode !== null || child.signalCode !== null) supervised.crashing = this.crashed(supervised, pgid, child.exitCode, child.signalCode)
      else child.once('exit', (code, signal) => { supervised.crashing = this.crashed(supervised, pgid, code, signal) })
      return
    }
    supervised.liveness = setInterval(() => {
      // A check that cannot read /proc now (EMFILE) says nothing: the next one decides.
      if (!alive(pgid, true)) supervised.crashing = this.crashed(supervised, pgid, null, null)
    }, this.timing.livenessPollMs)
    supervised.liveness.unref()
  }

  private unwatch (supervised: Supervised): void {
    supervised.child?.removeAllListeners('exit')
    if (supervised.liveness !== null) clearInterval(supervised.liveness)
    supervised.liveness = null
  }

  private async crashed (supervised: Supervised, pgid: number, exitCode: number | null, signal: NodeJS.Signals | null): Promise<void> {
    if (supervised.stopping || this.closed || String(pgid) !== supervised.running.handle) return
    this.unwatch(supervised)
    const { instanceId } = supervised.running
    const reason = exitReason(exitCode, signal)
    this.emit({ type: 'crashed', instanceId, reason, exitCode, signal })
    // The process this server watched may be gone while others of the instance live on (a killed sandbox monitor).
    // Never thrown out of here (an exit handler's promise): what cannot be killed now is in the cgroup the restart reuses.
    await terminateInstance(pgid, instanceId, supervised.cgroup, 0).catch(() => {})
    this.releasePort(supervised.running)
    supervised.backoff.healthyRunEnded(this.context.clock.nowMs() - supervised.upSinceMs)
    this.scheduleRestart(supervised, reason)
  }

  private scheduleRestart (supervised: Supervised, reason: string): void {
    if (supervised.stopping || this.closed) return
    const delay = supervised.backoff.nextDelayMs()
    if (delay === null) {
      this.emit({ type: 'gave-up', instanceId: supervised.running.instanceId, reason: supervised.backoff.gaveUpReason(reason), attempts: supervised.backoff.attempts })
      void this.forget(supervised).catch(() => {})
      return
    }
    supervised.restartTimer = setTimeout(() => {
      supervised.restartTimer = null
      supervised.restarting = this.restart(supervised).finally(() => { supervised.restarting = null })
    }, delay)
  }

  private async restart (supervised: Supervised): Promise<void> {
    let launched: Launched
    try {
      launched = await launchInstance(this.context, supervised.spec, supervised.env, supervised.network)
    } catch (error) {
      const failed = error instanceof InstanceFailedError ? error : new InstanceFailedError((error as Error).message)
      if (!supervised.stopping && !this.closed) {
        this.emit({ type: 'crashed', instanceId: supervised.running.instanceId, reason: failed.reason, exitCode: failed.exitCode, signal: failed.signal })
      }
      this.scheduleRestart(supervised, failed.reason)
      return
    }
    supervised.running = launched.running
    supervised.cgroup = launched.cgroup
    supervised.upSinceMs = this.context.clock.nowMs()
    this.watch(supervised, launched.child)
    if (supervised.stopping || this.closed) return
    this.emit({ type: 'restarted', instanceId: launched.running.instanceId, attempt: supervised.backoff.attempts, instance: launched.running })
  }

  private releasePort (running: RunningInstance): void {
    const port = hostPort(running)
    if (port !== null) this.context.ports.release(port)
  }

  private async forget (supervised: Supervised): Promise<void> {
    const { instanceId } = supervised.running
    this.instances.delete(instanceId)
    this.releasePort(supervised.running)
    for (const tail of supervised.tails) await tail.stop()
    await supervised.cgroup?.remove()
    await this.context.networks?.close(instanceId)
    await rm(join(this.context.instancesDir, instanceId), { recursive: true, force: true })
  }

  private emit (event: InstanceEvent): void {
    this.events.emit(event)
  }
}
