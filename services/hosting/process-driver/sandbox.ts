import { spawn, spawnSync, type ChildProcess, type SpawnSyncReturns } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { chmodSync, existsSync, lstatSync, mkdirSync, readlinkSync, realpathSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import type { Writable } from 'node:stream'
import { Cgroup, probeCgroups, scopedCgroups, type CgroupHost } from './cgroups.js'
import { InstanceNetworks, probeNetwork, scopeOf, type InstanceNetwork, type NetworkHost } from '../network/namespaces.js'
import { SLIRP, type Ipv4Range } from '../network/plan.js'

/**
 * What this host offers to contain builds and instances, found once at start:
 * bubblewrap for namespaces and a minimal read-only root, a writable cgroup
 * for limits, network namespaces of their own (root, iproute2, iptables,
 * slirp4netns), and an unprivileged user to run as when the server runs as
 * root. `sandboxFor` narrows it to one driver's directory.
 */
export interface SandboxHost {
  bwrap: string | null
  cgroups: CgroupHost | null
  /** The host user sandboxed processes run as; null runs them as the server's own user. */
  user: { uid: number, gid: number } | null
  /** What makes network namespaces here; null when sandboxes share the host's network. */
  network: NetworkHost | null
  /** One driver's namespaces (set by `sandboxFor`); null leaves commands on the host's network. */
  networks: InstanceNetworks | null
  /** bubblewrap's arguments for the sandbox's root: the system's programs, libraries and certificates, a few /etc files, nothing else. */
  root: string[]
  /** bubblewrap's namespaces and mounts besides the root, as far as this host allows them. */
  namespaces: string[]
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
  /** Network namespaces and the internal ranges they let through (HOSTING_APP_ALLOWED_RANGES); null shares the host's network. */
  network?: { allowed: Ipv4Range[] } | null
}

const NOBODY = 65534

/** bubblewrap's namespaces and mounts besides the root, the same for the probe and every launch; the network is the one it is started in. */
const BWRAP_NAMESPACES = ['--dev', '/dev', '--proc', '/proc', '--tmpfs', '/tmp', '--unshare-all', '--share-net', '--cap-drop', 'ALL']
/** No nested user namespaces inside: less of the kernel for an app to reach. Needs bubblewrap 0.8 and a kernel that lets it say so. */
const NO_NESTED_USERNS = ['--unshare-user', '--disable-userns']

/** System directories bound read-only (or recreated as the symlinks they are, on a merged /usr). */
const SYSTEM_DIRS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32']
/** What of the host's /etc a program needs: certificates, time zone, the dynamic loader's cache, service names. */
const ETC_FILES = ['/etc/ssl/certs', '/etc/ca-certificates', '/etc/pki', '/etc/localtime', '/etc/alternatives', '/etc/ld.so.cache', '/etc/ld.so.conf', '/etc/ld.so.conf.d', '/etc/services', '/etc/protocols', '/etc/host.conf', '/etc/gai.conf']

/** The sandbox's root: the system, the runtime (node's installation, wherever it is) and the /etc files above. */
function systemRoot (): string[] {
  const args: string[] = []
  for (const dir of SYSTEM_DIRS) {
    let stat
    try { stat = lstatSync(dir) } catch { continue }
    if (stat.isSymbolicLink()) args.push('--symlink', readlinkSync(dir), dir)
    else if (stat.isDirectory()) args.push('--ro-bind', dir, dir)
  }
  const runtime = dirname(dirname(realpathSync(process.execPath)))
  if (runtime !== '/' && !SYSTEM_DIRS.some((dir) => runtime === dir || runtime.startsWith(`${dir}/`))) args.push('--ro-bind', runtime, runtime)
  for (const file of ETC_FILES) if (existsSync(file)) args.push('--ro-bind', file, file)
  return args
}

/** /etc files written for the sandbox: who is who, how names resolve, and the resolver (slirp4netns's, in a namespace of its own). */
function sandboxEtc (network: boolean): Record<string, string | null> {
  return {
    hosts: '127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n',
    passwd: `root:x:0:0:root:/root:/usr/sbin/nologin\nnobody:x:${NOBODY}:${NOBODY}:nobody:/nonexistent:/usr/sbin/nologin\n`,
    group: `root:x:0:\nnogroup:x:${NOBODY}:\n`,
    'nsswitch.conf': 'passwd: files\ngroup: files\nhosts: files dns\n',
    // Sharing the host's network, the host's resolver is the one that works.
    'resolv.conf': network ? `nameserver ${SLIRP.dns}\n` : null
  }
}

export function probeSandbox (options: SandboxProbeOptions = {}): SandboxHost {
  const user = options.user !== undefined ? options.user : process.getuid?.() === 0 ? { uid: NOBODY, gid: NOBODY } : null
  const missing: string[] = []
  const root = systemRoot()
  let bwrap: string | null = null
  let namespaces = [...BWRAP_NAMESPACES, ...NO_NESTED_USERNS]
  const shared = 'so instances share the host\'s filesystem, process view and network'
  if (options.bwrap !== null) {
    const binary = options.bwrap ?? 'bwrap'
    const attempt = (flags: string[]): SpawnSyncReturns<string> => spawnSync(binary, [...root, ...flags, '--', 'true'], { cwd: '/', encoding: 'utf8', timeout: 10_000, ...(user ?? {}) })
    let probe = attempt(namespaces)
    if (probe.error === undefined && probe.status !== 0) {
      // An older bubblewrap (or kernel) that cannot refuse nested user namespaces still gives every other namespace.
      const older = attempt(BWRAP_NAMESPACES)
      if (older.error === undefined && older.status === 0) {
        missing.push(`bubblewrap (${binary}) cannot refuse nested user namespaces (${probe.stderr.trim().split('\n')[0]}), so apps may make their own`)
        probe = older
        namespaces = BWRAP_NAMESPACES
      }
    }
    if (probe.error !== undefined) missing.push(`bubblewrap (${binary}) cannot run: ${(probe.error as NodeJS.ErrnoException).code ?? probe.error.message}, ${shared}`)
    else if (probe.status !== 0) missing.push(`bubblewrap (${binary}) cannot create its namespaces: ${probe.stderr.trim()}, ${shared}`)
    else bwrap = binary
  } else {
    missing.push(`bubblewrap is turned off, ${shared}`)
  }
  let network: NetworkHost | null = null
  if (bwrap !== null && options.network !== null) {
    const found = probeNetwork(options.network?.allowed ?? [])
    if ('missing' in found) missing.push(`${found.missing}: instances and builds share the host's network`)
    else network = found
  }
  const cgroups = probeCgroups(options.cgroupRoot ?? '/sys/fs/cgroup', options.cgroupName ?? 'plinth-hosting')
  if ('missing' in cgroups) missing.push(`${cgroups.missing}, so no memory, CPU or pids limits apply`)
  return {
    bwrap,
    cgroups: 'missing' in cgroups ? null : cgroups,
    user,
    network,
    networks: null,
    root,
    namespaces,
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
 * One driver's sandbox, under its own directory `root`: its cgroups and
 * network namespaces in a scope of their own (so a restarted server finds
 * and sweeps what is its, and never another server's on the same host), and
 * the /etc files its sandboxes see. Sandboxes bind the driver's directories
 * at their own paths, so the sandbox user must reach them. Where it cannot
 * (a parent directory without o+x), sandboxes run as the server's user
 * instead, still without capabilities, and the reason says so.
 */
export function sandboxFor (host: SandboxHost, root: string): SandboxHost {
  let sandbox = host
  if (host.user !== null && reachableBy(host.user, [root]).length === 0) {
    const reason = `the sandbox user ${host.user.uid} cannot reach ${root} (a parent directory lacks o+x), so sandboxed processes run as the server's user`
    sandbox = { ...host, user: null, degradedReason: host.degradedReason === null ? reason : `${host.degradedReason}; ${reason}` }
  }
  const scope = scopeOf(root)
  const etcDir = join(root, 'sandbox-etc')
  mkdirSync(etcDir, { recursive: true })
  chmodSync(etcDir, 0o755)
  const etc: string[] = []
  for (const [name, contents] of Object.entries(sandboxEtc(sandbox.network !== null))) {
    const target = `/etc/${name}`
    if (contents !== null) {
      writeFileSync(join(etcDir, name), contents, { mode: 0o644 })
      etc.push('--ro-bind', join(etcDir, name), target)
    } else if (existsSync(target)) {
      etc.push('--ro-bind', target, target)
    }
  }
  return {
    ...sandbox,
    cgroups: sandbox.cgroups === null ? null : scopedCgroups(sandbox.cgroups, scope),
    networks: sandbox.network === null ? null : new InstanceNetworks(sandbox.network, scope),
    root: [...sandbox.root, ...etc]
  }
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
  /**
   * The network namespace to run in (an instance's). Without one, where the
   * driver makes namespaces, the command gets an outbound-only one of its own
   * for its life (a build step); elsewhere it shares the host's network.
   */
  network?: InstanceNetwork
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
  const own = command.network === undefined && host.networks !== null && host.bwrap !== null ? `step-${randomBytes(8).toString('hex')}` : null
  const network = own !== null ? await (host.networks as InstanceNetworks).open(own, { inbound: false }) : command.network ?? null
  const release = (): void => { if (own !== null) void host.networks?.close(own).catch(() => {}) }
  try {
    const child = await spawnIn(host, command, network)
    child.once('exit', release)
    return child
  } catch (error) {
    release()
    throw error
  }
}

/**
 * The hidden paths that lie inside what the sandbox's root binds (DATA_DIR
 * under /usr/local, say): only there is anything to hide. Elsewhere the
 * sandbox has nothing of them, and an empty mount would only show the path.
 */
function hiddenWithin (root: string[], hidden: string[]): string[] {
  const bound = root.flatMap((arg, i) => arg === '--ro-bind' ? [root[i + 2]] : [])
  return hidden.filter((path) => bound.some((dir) => path !== dir && path.startsWith(`${dir}/`)))
}

async function spawnIn (host: SandboxHost, command: SandboxedCommand, network: InstanceNetwork | null): Promise<ChildProcess> {
  let argv = command.argv
  if (host.bwrap !== null) {
    argv = [
      host.bwrap,
      ...host.root,
      ...host.namespaces,
      ...hiddenWithin(host.root, command.hidden).flatMap(path => ['--tmpfs', path]),
      ...command.readOnly.flatMap(path => ['--ro-bind', path, path]),
      ...command.writable.flatMap(path => ['--bind', path, path]),
      ...INJECTED_VARIABLES.filter(name => !Object.hasOwn(command.env, name)).flatMap(name => ['--unsetenv', name]),
      '--chdir', command.cwd,
      '--', ...argv
    ]
  }
  // Entering a namespace takes root: nsenter enters it, then becomes the sandbox user before bubblewrap runs.
  if (network !== null && host.network !== null) {
    const user = host.user === null ? [] : ['-S', String(host.user.uid), '-G', String(host.user.gid)]
    argv = [host.network.tools.nsenter, `--net=${network.path}`, ...user, '--', ...argv]
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
    ...(network === null ? host.user ?? {} : {})
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
