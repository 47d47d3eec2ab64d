import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import type { Writable } from 'node:stream'
import { Cgroup, probeCgroups, type CgroupHost } from './cgroups.js'

/**
 * What this host offers to contain builds and instances, found once at start:
 * bubblewrap for namespaces and a read-only root, a writable cgroup for limits,
 * and an unprivileged user to run as when the server runs as root.
 */
export interface SandboxHost {
  bwrap: string | null
  cgroups: CgroupHost | null
  /** The host user sandboxed processes run as; null runs them as the server's own user. */
  user: { uid: number, gid: number } | null
  /** What is missing, in words, or null when fully isolated. */
  degradedReason: string | null
}

export interface SandboxProbeOptions {
  /** The bubblewrap binary; null skips it. Default `bwrap` from PATH. */
  bwrap?: string | null
  /** Default /sys/fs/cgroup. */
  cgroupRoot?: string
  /** The parent group the driver creates its groups under. Default `plinth-hosting`. */
  cgroupName?: string
  /** Default nobody (65534) when the server runs as root, else the server's user. */
  user?: { uid: number, gid: number } | null
}

const NOBODY = 65534

/** bubblewrap's namespaces and mounts, without the per-command binds; the same for the probe and every launch. */
const BWRAP_BASE = ['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--unshare-all', '--share-net', '--cap-drop', 'ALL', '--tmpfs', '/tmp']

export function probeSandbox (options: SandboxProbeOptions = {}): SandboxHost {
  const user = options.user !== undefined ? options.user : process.getuid?.() === 0 ? { uid: NOBODY, gid: NOBODY } : null
  const missing: string[] = []
  let bwrap: string | null = null
  if (options.bwrap !== null) {
    const binary = options.bwrap ?? 'bwrap'
    const probe = spawnSync(binary, [...BWRAP_BASE, '--', 'true'], { cwd: '/', encoding: 'utf8', timeout: 10_000, ...(user ?? {}) })
    if (probe.error !== undefined) missing.push(`bubblewrap (${binary}) cannot run: ${(probe.error as NodeJS.ErrnoException).code ?? probe.error.message}, so instances share the host's filesystem and process view`)
    else if (probe.status !== 0) missing.push(`bubblewrap (${binary}) cannot create its namespaces: ${probe.stderr.trim()}, so instances share the host's filesystem and process view`)
    else bwrap = binary
  } else {
    missing.push('bubblewrap is turned off, so instances share the host\'s filesystem and process view')
  }
  const cgroups = probeCgroups(options.cgroupRoot ?? '/sys/fs/cgroup', options.cgroupName ?? 'plinth-hosting')
  if ('missing' in cgroups) missing.push(`${cgroups.missing}, so no memory, CPU or pids limits apply`)
  return {
    bwrap,
    cgroups: 'missing' in cgroups ? null : cgroups,
    user,
    degradedReason: missing.length === 0 ? null : missing.join('; ')
  }
}

/** The subset of `paths` the sandbox user can reach (every parent searchable), found by asking as that user. */
export function reachableBy (user: { uid: number, gid: number } | null, paths: string[]): string[] {
  if (user === null) return paths.filter(path => existsSync(path))
  const probe = spawnSync('/bin/sh', ['-c', 'for path; do [ -x "$path" ] && printf "%s\\0" "$path"; done; true', 'plinth-probe', ...paths], { cwd: '/', encoding: 'utf8', ...user })
  return probe.status === 0 ? probe.stdout.split('\0').filter(path => path !== '') : []
}

/**
 * Sandboxes bind the driver's directories at their own paths, so the sandbox
 * user must reach them. Where it cannot (a parent directory without o+x),
 * sandboxes run as the server's user instead, still without capabilities, and
 * the reason says so.
 */
export function sandboxFor (host: SandboxHost, root: string): SandboxHost {
  if (host.user === null || reachableBy(host.user, [root]).length === 1) return host
  const reason = `the sandbox user ${host.user.uid} cannot reach ${root} (a parent directory lacks o+x), so sandboxed processes run as the server's user`
  return { ...host, user: null, degradedReason: host.degradedReason === null ? reason : `${host.degradedReason}; ${reason}` }
}

export interface SandboxedCommand {
  argv: string[]
  /** The working directory, inside the sandbox and out. */
  cwd: string
  /** The whole environment: nothing of the server's own leaks in. */
  env: Record<string, string>
  readOnly: string[]
  writable: string[]
  /** Paths replaced by an empty tmpfs (the driver's root, the data directory), so one app never reads another's files; each must exist and be reachable by the sandbox user. */
  hidden: string[]
  cgroup: Cgroup | null
  stdout: 'pipe' | number
  stderr: 'pipe' | number
}

/**
 * The cgroup must hold the sandbox before it execs anything, and Node cannot
 * run code between fork and exec, so a fixed shell script waits on fd 3 until
 * the server has moved its pid in, then execs the command from its arguments
 * (never parsed by the shell).
 */
const CGROUP_GATE = 'read -r go <&3 && exec "$@" 3<&-'

/**
 * Variables a runtime may add to every child it spawns, whatever env the
 * call names (a test runner's loader in NODE_OPTIONS, a coverage directory):
 * inside the sandbox they would name files it cannot see or write. Unset
 * there unless the command's own environment sets them.
 */
const INJECTED_VARIABLES = ['NODE_OPTIONS', 'NODE_V8_COVERAGE']

/** Starts a sandboxed command in its own session and process group; resolves once it is in its cgroup. */
export async function spawnSandboxed (host: SandboxHost, command: SandboxedCommand): Promise<ChildProcess> {
  let argv = command.argv
  if (host.bwrap !== null) {
    argv = [
      host.bwrap,
      ...BWRAP_BASE,
      ...command.hidden.flatMap(path => ['--tmpfs', path]),
      ...command.readOnly.flatMap(path => ['--ro-bind', path, path]),
      ...command.writable.flatMap(path => ['--bind', path, path]),
      ...INJECTED_VARIABLES.filter(name => !Object.hasOwn(command.env, name)).flatMap(name => ['--unsetenv', name]),
      '--chdir', command.cwd,
      '--', ...argv
    ]
  }
  const gated = command.cgroup !== null
  if (gated) argv = ['/bin/sh', '-c', CGROUP_GATE, 'plinth-sandbox', ...argv]
  const child = spawn(argv[0], argv.slice(1), {
    cwd: command.cwd,
    env: command.env,
    // Detached: its own session and process group, so a signal to the group reaches every process, and the
    // instance outlives a server restart (no --die-with-parent) for the next server to adopt.
    detached: true,
    stdio: ['ignore', command.stdout, command.stderr, gated ? 'pipe' : 'ignore'],
    ...(host.user ?? {})
  })
  await new Promise<void>((resolve, reject) => {
    child.once('spawn', resolve)
    child.once('error', reject)
  })
  if (command.cgroup !== null) {
    const gate = child.stdio[3] as Writable
    try {
      await command.cgroup.enter(child.pid as number)
      gate.end('go\n')
    } catch (error) {
      // Closing the gate unanswered makes `read` fail, so the command never runs outside its limits.
      gate.destroy()
      throw error
    }
  }
  return child
}
