import { readdirSync, readFileSync } from 'node:fs'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Cgroup } from './cgroups.js'
import type { InstanceStats } from '../runtime.js'

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

interface ProcStat { state: string, pgrp: number, cpuTicks: number, rssPages: number }

function readStat (pid: number): ProcStat | null {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // The command name may hold spaces and parentheses; the fields after its last ')' are fixed.
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ')
    return { state: fields[0], pgrp: Number(fields[2]), cpuTicks: Number(fields[11]) + Number(fields[12]), rssPages: Number(fields[21]) }
  } catch {
    return null
  }
}

export function isAlive (pid: number): boolean {
  const stat = readStat(pid)
  return stat !== null && stat.state !== 'Z' && stat.state !== 'X'
}

export function readEnviron (pid: number): Record<string, string> | null {
  try {
    const env: Record<string, string> = {}
    for (const entry of readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0')) {
      const equals = entry.indexOf('=')
      if (equals > 0) env[entry.slice(0, equals)] = entry.slice(equals + 1)
    }
    return env
  } catch {
    return null
  }
}

export function carriesMarker (pid: number, instanceId: string): boolean {
  return readEnviron(pid)?.[MARKER] === instanceId
}

export async function instanceProcesses (pgid: number, instanceId: string, cgroup: Cgroup | null): Promise<number[]> {
  const found = new Set<number>()
  for (const name of readdirSync('/proc')) {
    const pid = Number(name)
    if (!Number.isInteger(pid)) continue
    const stat = readStat(pid)
    if (stat !== null && stat.pgrp === pgid && stat.state !== 'Z' && carriesMarker(pid, instanceId)) found.add(pid)
  }
  if (cgroup !== null) for (const pid of await cgroup.members()) if (isAlive(pid)) found.add(pid)
  return [...found]
}

export async function signalInstance (pgid: number, instanceId: string, cgroup: Cgroup | null, signal: NodeJS.Signals): Promise<number> {
  const pids = await instanceProcesses(pgid, instanceId, cgroup)
  for (const pid of pids) {
    try { process.kill(pid, signal) } catch { /* gone meanwhile */ }
  }
  return pids.length
}

/** Resolves true once no process of the instance is left, false when `timeoutMs` passed first. */
export async function waitGone (pgid: number, instanceId: string, cgroup: Cgroup | null, timeoutMs: number): Promise<boolean> {
  for (let waited = 0; ; waited += POLL_MS) {
    if ((await instanceProcesses(pgid, instanceId, cgroup)).length === 0) return true
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
  for (const pid of await instanceProcesses(pgid, instanceId, null)) {
    const stat = readStat(pid)
    if (stat !== null) { ticks += stat.cpuTicks; pages += stat.rssPages }
  }
  return { cpuSeconds: ticks / CLOCK_TICKS_PER_SECOND, memoryBytes: pages * PAGE_BYTES }
}
