import type { ChildProcess } from 'node:child_process'
import { closeSync, openSync } from 'node:fs'
import { open, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Clock } from '../../clock.js'
import { InstanceFailedError, type InstanceSpec, type RunningInstance } from '../runtime.js'
import { probeHealth } from '../health-probe.js'
import { exitReason } from '../supervision.js'
import { Cgroup } from './cgroups.js'
import type { PortAllocator } from './ports.js'
import { MARKER, terminateInstance } from './process-tree.js'
import { spawnSandboxed, type SandboxHost } from './sandbox.js'

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

/**
 * Starts one process of an instance on a fresh loopback port and resolves once
 * its health path answers below 500. A process that exits first, or stays
 * unhealthy past the timeout, is cleaned up and rejected with the reason.
 */
export async function launchInstance (context: LaunchContext, spec: StoredSpec, env: Record<string, string>): Promise<Launched> {
  const files = logFiles(context.instancesDir, spec.instanceId)
  const stderrStart = await stat(files.stderr).then(s => s.size, () => 0)
  const port = await context.ports.allocate()
  const cgroup = cgroupOf(context.sandbox, spec.instanceId)
  const stdout = openSync(files.stdout, 'a')
  const stderr = openSync(files.stderr, 'a')
  let child: ChildProcess
  try {
    await cgroup?.create(spec.limits)
    child = await spawnSandboxed(context.sandbox, {
      argv: spec.artifact.command as string[],
      cwd: spec.artifact.ref,
      env: {
        PATH: context.path,
        HOME: '/tmp',
        ...env,
        PORT: String(port),
        HOST: LOOPBACK,
        [MARKER]: spec.instanceId,
        PLINTH_APP_ID: spec.appId,
        PLINTH_DEPLOYMENT_ID: spec.deploymentId
      },
      readOnly: [spec.artifact.ref],
      writable: [],
      hidden: context.hidden,
      cgroup,
      stdout,
      stderr
    })
  } catch (error) {
    context.ports.release(port)
    await cgroup?.remove()
    throw new InstanceFailedError(`could not start: ${(error as Error).message}`)
  } finally {
    closeSync(stdout)
    closeSync(stderr)
  }
  const pgid = child.pid as number
  const exited = new Promise<{ code: number | null, signal: string | null }>(resolve => child.once('exit', (code, signal) => resolve({ code, signal })))
  const running: RunningInstance = {
    instanceId: spec.instanceId,
    appId: spec.appId,
    deploymentId: spec.deploymentId,
    driver: 'process',
    host: LOOPBACK,
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
      const answer = await probeHealth(LOOPBACK, port, spec.healthCheckPath, remaining)
      if ('status' in answer && answer.status < 500) return { running, child, cgroup }
      lastAnswer = 'status' in answer ? String(answer.status) : `no answer (${answer.error})`
    }
    if (ended.how !== null) {
      await cleanUp(context, spec.instanceId, pgid, cgroup, port, 0)
      const last = await lastLine(files.stderr, stderrStart)
      throw new InstanceFailedError(`${exitReason(ended.how.code, ended.how.signal)} before becoming healthy${last === null ? '' : `: ${last}`}`, ended.how.code, ended.how.signal)
    }
    if (context.clock.nowMs() >= deadline) {
      await cleanUp(context, spec.instanceId, pgid, cgroup, port, FAILED_START_GRACE_MS)
      throw new InstanceFailedError(`unhealthy after ${spec.healthTimeoutMs} ms: last answer ${lastAnswer}`)
    }
    await Promise.race([sleep(context.healthPollMs), exited])
  }
}

async function cleanUp (context: LaunchContext, instanceId: string, pgid: number, cgroup: Cgroup | null, port: number, graceMs: number): Promise<void> {
  await terminateInstance(pgid, instanceId, cgroup, graceMs)
  await cgroup?.remove()
  context.ports.release(port)
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
