import { setTimeout as sleep } from 'node:timers/promises'
import type { Cgroup } from './cgroups.js'
import type { InstanceStats } from '../runtime.js'
import { isAlive, listPids, ProcUnreadableError, readEnviron, readStat } from '../proc.js'

/**
 * The processes of one instance, found without being their parent (an adopted
 * instance is not): the process group its launch started, each member checked
 * for the instance's marker in its environment so a reused pid or group id is
 * never taken for ours, plus whatever its cgroup holds.
 */
export const MARKER = 'PLINTH_INSTANCE_ID'

const CLOCK_TICKS_PER_SECOND = 100
const PAGE_BYTES = 4096
const POLL_MS = 50
/** How long a scan that cannot read /proc (EMFILE, ENFILE) is tried again before the caller is told. */
const UNREADABLE_RETRY_MS = 30_000

export { isAlive, readEnviron }

export function carriesMarker (pid: number, instanceId: string): boolean {
  return readEnviron(pid)?.[MARKER] === instanceId
}

/** The instance's live processes; throws ProcUnreadableError when /proc cannot be read now, never "none" for "could not look". */
export async function instanceProcesses (pgid: number, instanceId: string, cgroup: Cgroup | null): Promise<number[]> {
  const found = new Set<number>()
  for (const pid of listPids()) {
    const stat = readStat(pid)
    if (stat !== null && stat.pgrp === pgid && stat.state !== 'Z' && carriesMarker(pid, instanceId)) found.add(pid)
  }
  if (cgroup !== null) for (const pid of await cgroup.members()) if (isAlive(pid)) found.add(pid)
  return [...found]
}

/** `scan`, tried again for a while when /proc cannot be read for want of descriptors or memory. */
async function patiently<T> (scan: () => Promise<T>): Promise<T> {
  for (let waited = 0; ; waited += POLL_MS * 4) {
    try {
      return await scan()
    } catch (error) {
      if (!(error instanceof ProcUnreadableError) || waited >= UNREADABLE_RETRY_MS) throw error
      await sleep(POLL_MS * 4)
    }
  }
}

export async function signalInstance (pgid: number, instanceId: string, cgroup: Cgroup | null, signal: NodeJS.Signals): Promise<number> {
  const pids = await patiently(async () => await instanceProcesses(pgid, instanceId, cgroup))
  for (const pid of pids) {
    try { process.kill(pid, signal) } catch { /* gone meanwhile */ }
  }
  return pids.length
}

/** Resolves true once no process of the instance is left, false when `timeoutMs` passed first. */
export async function waitGone (pgid: number, instanceId: string, cgroup: Cgroup | null, timeoutMs: number): Promise<boolean> {
  for (let waited = 0; ; waited += POLL_MS) {
    if ((await patiently(async () => await instanceProcesses(pgid, instanceId, cgroup))).length === 0) return true
    if (waited >= timeoutMs) return false
    await sleep(POLL_MS)
  }
}

/** SIGTERM, SIGKILL after `graceMs`, until nothing is left. */
export async function terminateInstance (pgid: number, instanceId: string, cgroup: Cgroup | null, graceMs: number): Promise<void> {
  if (await signalInstance(pgid, instanceId, cgroup, 'SIGTERM') > 0 && await waitGone(pgid, instanceId, cgroup, graceMs)) return
  do await signalInstance(pgid, instanceId, cgroup, 'SIGKILL')
  while (!await waitGone(pgid, instanceId, cgroup, 1000))
}

/** CPU and resident memory summed over the instance's processes, where no cgroup counts them. */
export async function processStats (pgid: number, instanceId: string): Promise<InstanceStats> {
  let ticks = 0
  let pages = 0
  for (const pid of await patiently(async () => await instanceProcesses(pgid, instanceId, null))) {
    const stat = readStat(pid)
    if (stat !== null) { ticks += stat.cpuTicks; pages += stat.rssPages }
  }
  return { cpuSeconds: ticks / CLOCK_TICKS_PER_SECOND, memoryBytes: pages * PAGE_BYTES }
}
