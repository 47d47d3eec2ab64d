import { readdirSync, readFileSync } from 'node:fs'

/**
 * Reading /proc without ever being wrong about a process: a process that is
 * gone (ENOENT, ESRCH) reads as null, one this server may not read (EACCES)
 * as not ours, and a read that fails for want of resources (EMFILE, ENFILE,
 * ENOMEM) throws `ProcUnreadableError`, so that no caller takes "could not
 * look" for "nothing there" and the caller decides to try again later.
 */
export class ProcUnreadableError extends Error {
  constructor (readonly code: string, what: string) {
    super(`cannot read ${what} now (${code})`)
  }
}

const GONE = new Set(['ENOENT', 'ESRCH'])
const NOT_OURS = new Set(['EACCES', 'EPERM'])

function failure (error: unknown, what: string): 'gone' | 'not ours' {
  const code = (error as NodeJS.ErrnoException).code ?? 'EIO'
  if (GONE.has(code)) return 'gone'
  if (NOT_OURS.has(code)) return 'not ours'
  throw new ProcUnreadableError(code, what)
}

export interface ProcStat { state: string, pgrp: number, cpuTicks: number, rssPages: number }

export function readStat (pid: number): ProcStat | null {
  let text: string
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8')
  } catch (error) {
    failure(error, `/proc/${pid}/stat`)
    return null
  }
  // The command name may hold spaces and parentheses; the fields after its last ')' are fixed.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ')
  return { state: fields[0], pgrp: Number(fields[2]), cpuTicks: Number(fields[11]) + Number(fields[12]), rssPages: Number(fields[21]) }
}

/** The process's environment; null when it is gone, empty when it is not this server's to read. */
export function readEnviron (pid: number): Record<string, string> | null {
  let text: string
  try {
    text = readFileSync(`/proc/${pid}/environ`, 'utf8')
  } catch (error) {
    return failure(error, `/proc/${pid}/environ`) === 'gone' ? null : {}
  }
  const env: Record<string, string> = {}
  for (const entry of text.split('\0')) {
    const equals = entry.indexOf('=')
    if (equals > 0) env[entry.slice(0, equals)] = entry.slice(equals + 1)
  }
  return env
}

/** Every pid /proc lists now. */
export function listPids (): number[] {
  let names: string[]
  try {
    names = readdirSync('/proc')
  } catch (error) {
    failure(error, '/proc')
    return []
  }
  return names.map(Number).filter((pid) => Number.isInteger(pid) && pid > 0)
}

export function isAlive (pid: number): boolean {
  const stat = readStat(pid)
  return stat !== null && stat.state !== 'Z' && stat.state !== 'X'
}
