import { spawn, type ChildProcess } from 'node:child_process'
import { createHash, randomInt } from 'node:crypto'
import { accessSync, closeSync, constants, openSync, readFileSync, readlinkSync } from 'node:fs'
import { mkdir, readdir, readFile, rm, rmdir, writeFile } from 'node:fs/promises'
import { networkInterfaces } from 'node:os'
import { delimiter, join } from 'node:path'
import type { Readable, Writable } from 'node:stream'
import { setTimeout as sleep } from 'node:timers/promises'
import { allowedRoutes, firewallRules, INSTANCE_PORT, LINK_COUNT, LINK_POOL, linkAddresses, namespaceRoutes, rangeText, SLIRP, type Ipv4Range, type NetworkPolicy } from './plan.js'
import { readEnviron } from '../proc.js'

/**
 * Network namespaces for instances and builds, made by the server (root):
 * a namespace held by a small process of its own, its refusals (routes and
 * firewall) set before anything is connected to it, then a veth link whose
 * host end only the host uses (instances), then slirp4netns for the way out.
 * The app runs in it without capabilities, so it can change none of this.
 */

const TOOLS = ['unshare', 'setpriv', 'nsenter', 'ip', 'iptables-restore', 'slirp4netns', 'sleep', 'sh'] as const
type Tool = typeof TOOLS[number]
const NOBODY = 65534
/** Where the namespaces' state lives: host-local, gone at reboot with the namespaces themselves. */
const STATE_ROOT = '/run/plinth-hosting/networks'
const MARKER = 'PLINTH_NETWORK'
const READY_MS = 10_000
const POLL_MS = 5
const NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,79}$/

export interface NetworkHost {
  tools: Record<Tool, string>
  /** Internal ranges the operator lets apps reach (HOSTING_APP_ALLOWED_RANGES). */
  allowed: Ipv4Range[]
}

/** A namespace made for an instance (reachable by the gateway) or a build (outbound only). */
export interface InstanceNetwork {
  name: string
  /** The namespace, to enter (`nsenter --net=`) or hand an engine (`ns:`). */
  path: string
  /** Where the gateway reaches the app; null for an outbound-only namespace. */
  address: string | null
  port: number
}

interface State { holder: number, slirp: number | null, index: number | null }

function findTool (name: string, path: string): string | null {
  for (const dir of path.split(delimiter)) {
    if (dir === '') continue
    try {
      accessSync(join(dir, name), constants.X_OK)
      return join(dir, name)
    } catch { /* not here */ }
  }
  return null
}

/** What this host offers for instance networks, or why it cannot give them. */
export function probeNetwork (allowed: Ipv4Range[] = [], path = `${process.env.PATH ?? ''}:/usr/sbin:/sbin:/usr/bin:/bin`): NetworkHost | { missing: string } {
  if (process.getuid?.() !== 0) return { missing: 'the server does not run as root, so it cannot give instances a network namespace of their own' }
  const tools: Partial<Record<Tool, string>> = {}
  for (const tool of TOOLS) {
    const found = findTool(tool, path)
    if (found === null) return { missing: `${tool} is not installed${tool === 'slirp4netns' ? '' : ' (iproute2, iptables and util-linux are needed)'}, so instances cannot have a network namespace of their own` }
    tools[tool] = found
  }
  return { tools: tools as Record<Tool, string>, allowed }
}

/** A short stable name for a driver's own things on a shared host (its cgroups, its namespaces), from its directory. */
export function scopeOf (dir: string): string {
  return createHash('sha256').update(dir).digest('hex').slice(0, 12)
}

async function run (file: string, args: string[], input = ''): Promise<string> {
  const child = spawn(file, args, { stdio: ['pipe', 'pipe', 'pipe'], env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' } })
  const out: Buffer[] = []
  const err: Buffer[] = []
  child.stdout.on('data', (chunk: Buffer) => out.push(chunk))
  child.stderr.on('data', (chunk: Buffer) => err.push(chunk))
  child.stdin.on('error', () => {})
  child.stdin.end(input)
  const [code, error] = await new Promise<[number | null, Error | null]>((resolve) => {
    child.once('error', (error) => resolve([null, error]))
    child.once('close', (code) => resolve([code, null]))
  })
  if (error !== null) throw new Error(`${file} could not run: ${(error as NodeJS.ErrnoException).code ?? error.message}`)
  if (code !== 0) throw new Error(`${file} ${args.slice(0, 2).join(' ')} failed: ${Buffer.concat(err).toString().trim() || `exit ${String(code)}`}`)
  return Buffer.concat(out).toString()
}

async function started (child: ChildProcess): Promise<number> {
  return await new Promise((resolve, reject) => {
    child.once('spawn', () => resolve(child.pid as number))
    child.once('error', reject)
  })
}

function commandOf (pid: number): string | null {
  try { return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0] } catch { return null }
}

function namespaceOf (pid: number | 'self'): string | null {
  try { return readlinkSync(`/proc/${pid}/ns/net`) } catch { return null }
}

const ours = (pid: number, marker: string): boolean => readEnviron(pid)?.[MARKER] === marker

/** Kills a process of ours, judged by its marker; true when it was ours and alive. */
function killMarked (pid: number, marker: string, group = false): boolean {
  const environ = readEnviron(pid)
  if (environ?.[MARKER] !== marker) {
    // A group whose leader is gone is still ours: the kernel hands out no pid still in use as a group id.
    if (group && environ === null) { try { process.kill(-pid, 'SIGKILL') } catch { /* none left */ } }
    return false
  }
  try { process.kill(group ? -pid : pid, 'SIGKILL') } catch { /* gone meanwhile */ }
  return true
}

/** One driver's namespaces, named by what they serve (an instance id, a build step), their state under /run. */
export class InstanceNetworks {
  private readonly dir: string
  private readonly policy: NetworkPolicy
  private poolRoute: Promise<string> | null = null

  constructor (private readonly host: NetworkHost, private readonly scope: string) {
    this.dir = join(STATE_ROOT, scope)
    this.policy = { allowed: host.allowed, hostAddresses: Object.values(networkInterfaces()).flat().flatMap((entry) => entry === undefined || entry.family !== 'IPv4' ? [] : [entry.address]) }
  }

  private marker (name: string): string {
    return `${this.scope}/${name}`
  }

  private stateFile (name: string): string {
    return join(this.dir, `${name}.json`)
  }

  /** Makes the namespace `name`; with `inbound`, a link the gateway reaches the app by. */
  async open (name: string, options: { inbound: boolean }): Promise<InstanceNetwork> {
    if (!NAME.test(name)) throw new Error(`not a network name: ${name}`)
    await mkdir(this.dir, { recursive: true, mode: 0o700 })
    const { tools } = this.host
    const env = { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', [MARKER]: this.marker(name) }
    // Interfaces made in it from the start (the link, slirp's tap) have no IPv6: the firewall below is IPv4's.
    const holder = spawn(tools.unshare, ['--net', '--', tools.sh, '-c', 'echo 1 > /proc/sys/net/ipv6/conf/default/disable_ipv6 && exec "$@"', 'plinth-netns',
      tools.setpriv, `--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', '--no-new-privs', '--', tools.sleep, 'infinity'], { detached: true, stdio: 'ignore', env })
    const state: State = { holder: await started(holder), slirp: null, index: null }
    holder.unref()
    await writeFile(this.stateFile(name), JSON.stringify(state))
    const routesFile = join(this.dir, `${name}.routes`)
    try {
      const path = `/proc/${state.holder}/ns/net`
      await this.untilHolding(state.holder)
      let link: { host: string, instance: string } | null = null
      if (options.inbound) {
        state.index = await this.addLink(state.holder)
        link = linkAddresses(state.index)
      }
      // Refusals before anything of the outside is connected: slirp4netns comes last.
      await writeFile(routesFile, namespaceRoutes(this.policy, link).join('\n') + '\n')
      await run(tools.nsenter, [`--net=${path}`, '--', tools.sh, '-c', '"$1" -batch "$2" && exec "$3"', 'plinth-netns', tools.ip, routesFile, tools['iptables-restore']], firewallRules(this.policy, link))
      state.slirp = await this.startSlirp(name, state.holder, env)
      const allowed = allowedRoutes(this.policy)
      if (allowed.length > 0) await run(tools.nsenter, [`--net=${path}`, '--', tools.ip, '-batch', '-'], allowed.join('\n') + '\n')
      await writeFile(this.stateFile(name), JSON.stringify(state))
      return { name, path, address: link?.instance ?? null, port: INSTANCE_PORT }
    } catch (error) {
      await writeFile(this.stateFile(name), JSON.stringify(state)).catch(() => {})
      await this.close(name).catch(() => {})
      throw new Error(`the instance's network could not be set up: ${(error as Error).message}`)
    } finally {
      await rm(routesFile, { force: true })
    }
  }

  /** The namespace `name` made earlier (by this server or one before it), or null when it is gone. */
  async find (name: string): Promise<InstanceNetwork | null> {
    if (!NAME.test(name)) return null
    const state = await this.read(name)
    if (state === null || !ours(state.holder, this.marker(name))) return null
    return { name, path: `/proc/${state.holder}/ns/net`, address: state.index === null ? null : linkAddresses(state.index).instance, port: INSTANCE_PORT }
  }

  /** Takes the namespace down: its link, slirp4netns and its holder. What still runs in it keeps it until it ends. */
  async close (name: string): Promise<void> {
    if (!NAME.test(name)) return
    const state = await this.read(name)
    if (state === null) return
    const marker = this.marker(name)
    if (state.index !== null && ours(state.holder, marker)) {
      // Only while its holder lives is the link certainly this namespace's and not a later one's of the same name.
      await run(this.host.tools.ip, ['link', 'del', `plv${state.index}`]).catch(() => {})
    }
    if (state.slirp !== null) killMarked(state.slirp, marker, true)
    killMarked(state.holder, marker)
    await rm(this.stateFile(name), { force: true })
    await rm(join(this.dir, `${name}.slirp.log`), { force: true })
  }

  /** Closes every namespace of this driver that `keep` does not name (left by a server that stopped without closing them). */
  async sweep (keep: (name: string) => boolean): Promise<string[]> {
    const files = await readdir(this.dir).catch(() => [] as string[])
    const swept: string[] = []
    for (const file of files) {
      const name = file.replace(/\.json$/, '')
      if (file === name || keep(name)) continue
      await this.close(name)
      swept.push(name)
    }
    return swept
  }

  /** Removes this driver's state directory once nothing is left in it. */
  async release (): Promise<void> {
    await rmdir(this.dir).catch(() => {})
  }

  private async read (name: string): Promise<State | null> {
    return await readFile(this.stateFile(name), 'utf8').then((text) => JSON.parse(text) as State, () => null)
  }

  /** Until the holder is `sleep` in a namespace of its own: its namespace made and its IPv6 default set. */
  private async untilHolding (pid: number): Promise<void> {
    const own = namespaceOf('self')
    for (let waited = 0; waited < READY_MS; waited += POLL_MS) {
      const current = namespaceOf(pid)
      if (current === null) throw new Error('the namespace\'s holder exited')
      if (current !== own && commandOf(pid) === this.host.tools.sleep) return
      await sleep(POLL_MS)
    }
    throw new Error('the namespace\'s holder did not make its namespace')
  }

  /** A veth pair: `plv<index>` on the host, eth0 in the namespace; the kernel refuses a name in use, so concurrent servers never share one. */
  private async addLink (holder: number): Promise<number> {
    // On the host, an address of the pool with no link (an instance gone) fails at once instead of leaving by the default route.
    this.poolRoute ??= run(this.host.tools.ip, ['route', 'replace', 'unreachable', rangeText(LINK_POOL)]).catch((error: Error) => { this.poolRoute = null; throw error })
    await this.poolRoute
    const start = randomInt(LINK_COUNT)
    for (let attempt = 0; attempt < 64; attempt++) {
      const index = (start + attempt * 7919) % LINK_COUNT
      const { host } = linkAddresses(index)
      try {
        await run(this.host.tools.ip, ['-batch', '-'], `link add plv${index} type veth peer name eth0 netns ${holder}\naddress add ${host}/31 dev plv${index}\nlink set plv${index} up\n`)
      } catch (error) {
        // The kernel refuses a name in use (another server's link) before anything else of the batch runs.
        if (/exists/i.test((error as Error).message)) continue
        throw error
      }
      return index
    }
    throw new Error('no free link for the instance')
  }

  /**
   * slirp4netns with the host's loopback refused, in its own mount namespace
   * (its sandbox unmounts what it does not need, which would otherwise reach
   * the host's shared mounts) and its own pid namespace (as root without
   * capabilities it could still signal the host's root processes).
   */
  private async startSlirp (name: string, holder: number, env: Record<string, string>): Promise<number> {
    const { tools } = this.host
    const log = openSync(join(this.dir, `${name}.slirp.log`), 'w')
    let child: ChildProcess
    try {
      child = spawn(tools.unshare, ['--mount', '--pid', '--fork', '--kill-child', '--', tools.slirp4netns, '--configure', `--mtu=${SLIRP.mtu}`, '--disable-host-loopback',
        '--enable-sandbox', '--enable-seccomp', '--ready-fd=3', String(holder), SLIRP.tap], { detached: true, stdio: ['ignore', 'ignore', log, 'pipe'], env })
    } finally {
      closeSync(log)
    }
    const pid = await started(child)
    child.unref()
    const ready = child.stdio[3] as Readable & Writable
    const outcome = await Promise.race([
      new Promise<string>((resolve) => ready.once('data', () => resolve('ready'))),
      new Promise<string>((resolve) => child.once('exit', (code) => resolve(`slirp4netns exited with code ${String(code)}`))),
      sleep(READY_MS).then(() => 'slirp4netns did not become ready')
    ])
    ready.destroy()
    if (outcome !== 'ready') {
      const said = await readFile(join(this.dir, `${name}.slirp.log`), 'utf8').catch(() => '')
      try { process.kill(-pid, 'SIGKILL') } catch { /* gone */ }
      throw new Error(`${outcome}${said.trim() === '' ? '' : `: ${said.trim().split('\n').pop() ?? ''}`}`)
    }
    return pid
  }
}
