import type { ChildProcess } from 'node:child_process'
import { closeSync, openSync } from 'node:fs'
import { open, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Clock } from '../../platform/clock.js'
import { InstanceFailedError, type InstanceSpec, type RunningInstance } from '../runtime.js'
import { probeHealth } from '../health-probe.js'
import { exitReason } from '../supervision.js'
import { Cgroup } from './cgroups.js'
import type { PortAllocator } from './ports.js'
import { MARKER, terminateInstance } from './process-tree.js'
import { spawnSandboxed, type SandboxHost } from './sandbox.js'
import type { InstanceNetwork, InstanceNetworks } from '../network/namespaces.js'

const LOOPBACK = '127.0.0.1'
/** How long an instance that never became healthy gets to stop on SIGTERM before SIGKILL. */
const FAILED_START_GRACE_MS = 2000
/** Bounds on one health request: long enough for a busy app, never much past the health deadline. */
const MIN_ATTEMPT_MS = 100
const MAX_ATTEMPT_MS = 2000

/** What a restarted server needs to supervise an instance again; the environment's values are not kept on disk, only their names. */
export type StoredSpec = Omit<InstanceSpec, 'env' | 'log'> & { envKeys: string[] }

export interface LaunchContext {
  instancesDir: string
  sandbox: SandboxHost
  hidden: string[]
  ports: PortAllocator
  /** Each instance's own network namespace, where the host can make them; null runs instances on the host's loopback. */
  networks: InstanceNetworks | null
  clock: Clock
  path: string
  healthPollMs: number
}

export interface Launched {
  running: RunningInstance
  child: ChildProcess
  cgroup: Cgroup | null
}

export const logFiles = (instancesDir: string, instanceId: string) => ({
  stdout: join(instancesDir, instanceId, 'stdout.log'),
  stderr: join(instancesDir, instanceId, 'stderr.log')
})

export function cgroupOf (sandbox: SandboxHost, instanceId: string): Cgroup | null {
  return sandbox.cgroups === null ? null : Cgroup.at(sandbox.cgroups, `instance-${instanceId}`)
}

/** The loopback port an instance on the host's network holds, to give back when it ends; null for one in a namespace of its own. */
export function hostPort (running: RunningInstance): number | null {
  return running.host === LOOPBACK ? running.port : null
}

/**
 * Starts one process of an instance, in its network namespace (or on a fresh
 * loopback port where there is none), and resolves once its health path
 * answers below 500. A process that exits first, or stays unhealthy past the
 * timeout, is cleaned up and rejected with the reason.
 */
export async function launchInstance (context: LaunchContext, spec: StoredSpec, env: Record<string, string>, network: InstanceNetwork | null): Promise<Launched> {
  const files = logFiles(context.instancesDir, spec.instanceId)
  const stderrStart = await stat(files.stderr).then(s => s.size, () => 0)
  const host = network?.address ?? LOOPBACK
  const port = network === null ? await context.ports.allocate() : network.port
  const release = (): void => { if (network === null) context.ports.release(port) }
  const cgroup = cgroupOf(context.sandbox, spec.instanceId)
  let child: ChildProcess
  let stdout: number | null = null
  let stderr: number | null = null
  try {
    stdout = openSync(files.stdout, 'a')
    stderr = openSync(files.stderr, 'a')
    await cgroup?.create(spec.limits)
    child = await spawnSandboxed(context.sandbox, {
      argv: spec.artifact.command as string[],
      cwd: spec.artifact.ref,
      env: {
        PATH: context.path,
        HOME: '/tmp',
        ...env,
        PORT: String(port),
        // In its own namespace the app listens on all of its addresses: the gateway comes over its link.
        HOST: network === null ? LOOPBACK : '0.0.0.0',
        [MARKER]: spec.instanceId,
        PLINTH_APP_ID: spec.appId,
        PLINTH_DEPLOYMENT_ID: spec.deploymentId
      },
      readOnly: [spec.artifact.ref],
      writable: [],
      hidden: context.hidden,
      cgroup,
      stdout,
      stderr,
      ...(network === null ? {} : { network })
    })
  } catch (error) {
    release()
    await cgroup?.remove().catch(() => {})
    throw new InstanceFailedError(`could not start: ${(error as Error).message}`)
  } finally {
    if (stdout !== null) closeSync(stdout)
    if (stderr !== null) closeSync(stderr)
  }
  const pgid = child.pid as number
  const exited = new Promise<{ code: number | null, signal: string | null }>(resolve => child.once('exit', (code, signal) => resolve({ code, signal })))
  const running: RunningInstance = {
    instanceId: spec.instanceId,
    appId: spec.appId,
    deploymentId: spec.deploymentId,
    driver: 'process',
    host,
    port,
    handle: String(pgid),
    startedAt: context.clock.now().toISOString()
  }
  const deadline = context.clock.nowMs() + spec.healthTimeoutMs
  let lastAnswer = 'none'
  const ended: { how: { code: number | null, signal: string | null } | null } = { how: null }
  void exited.then(how => { ended.how = how })
  for (;;) {
    if (ended.how === null) {
      const remaining = Math.max(MIN_ATTEMPT_MS, Math.min(MAX_ATTEMPT_MS, deadline - context.clock.nowMs()))
      const answer = await probeHealth(host, port, spec.healthCheckPath, remaining)
      if ('status' in answer && answer.status < 500) return { running, child, cgroup }
      lastAnswer = 'status' in answer ? String(answer.status) : `no answer (${answer.error})`
    }
    if (ended.how !== null) {
      await cleanUp(spec.instanceId, pgid, cgroup, release, 0)
      const last = await lastLine(files.stderr, stderrStart)
      throw new InstanceFailedError(`${exitReason(ended.how.code, ended.how.signal)} before becoming healthy${last === null ? '' : `: ${last}`}`, ended.how.code, ended.how.signal)
    }
    if (context.clock.nowMs() >= deadline) {
      await cleanUp(spec.instanceId, pgid, cgroup, release, FAILED_START_GRACE_MS)
      throw new InstanceFailedError(`unhealthy after ${spec.healthTimeoutMs} ms: last answer ${lastAnswer}`)
    }
    await Promise.race([sleep(context.healthPollMs), exited])
  }
}

async function cleanUp (instanceId: string, pgid: number, cgroup: Cgroup | null, release: () => void, graceMs: number): Promise<void> {
  await terminateInstance(pgid, instanceId, cgroup, graceMs)
  await cgroup?.remove()
  release()
}

/** The last non-empty line the process wrote to stderr since `from`. */
async function lastLine (file: string, from: number): Promise<string | null> {
  const handle = await open(file, 'r')
  try {
    const { size } = await handle.stat()
    const start = Math.max(from, size - 4096)
    const buffer = Buffer.alloc(size - start)
    await handle.read(buffer, 0, buffer.length, start)
    const lines = buffer.toString('utf8').split('\n').map(line => line.trim()).filter(line => line !== '')
    return lines.length === 0 ? null : lines[lines.length - 1]
  } finally {
    await handle.close()
  }
}
