import { mkdir, readdir, readFile, rmdir, writeFile } from 'node:fs/promises'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import type { InstanceLimits, InstanceStats } from '../runtime.js'
import { ProcUnreadableError } from '../proc.js'

/**
 * Memory, CPU and pids limits for one instance or build, in either cgroup
 * layout: v1 (a hierarchy per controller, as on these machines) or v2 (one
 * unified tree). The server moves the sandbox's first process in before it
 * execs anything, so every later fork inherits the group.
 */
export type CgroupLayout = 'v1' | 'v2'

const CFS_PERIOD_US = 100_000
const REMOVE_ATTEMPTS = 40
const REMOVE_RETRY_MS = 50
const V1_CONTROLLERS = ['memory', 'cpu', 'cpuacct', 'pids'] as const

export interface CgroupHost {
  layout: CgroupLayout
  /** The parent group under each controller root (v1) or the unified root (v2). */
  parents: string[]
}

/** One group: a directory per controller (v1) or one directory (v2). */
export class Cgroup {
  constructor (readonly layout: CgroupLayout, readonly dirs: Record<string, string>) {}

  static at (host: CgroupHost, name: string): Cgroup {
    if (host.layout === 'v2') return new Cgroup('v2', { unified: join(host.parents[0], name) })
    const dirs: Record<string, string> = {}
    V1_CONTROLLERS.forEach((controller, i) => { dirs[controller] = join(host.parents[i], name) })
    return new Cgroup('v1', dirs)
  }

  async create (limits: InstanceLimits): Promise<void> {
    for (const dir of this.uniqueDirs()) await mkdir(dir, { recursive: true })
    const memoryBytes = String(Math.floor(limits.memoryMb * 1024 * 1024))
    const quota = Math.max(1000, Math.round(limits.cpus * CFS_PERIOD_US))
    if (this.layout === 'v2') {
      const dir = this.dirs.unified
      await writeFile(join(dir, 'memory.max'), memoryBytes)
      // Without this the group could page out to swap and keep growing past its limit.
      await writeOptional(join(dir, 'memory.swap.max'), '0')
      await writeFile(join(dir, 'cpu.max'), `${quota} ${CFS_PERIOD_US}`)
      await writeFile(join(dir, 'pids.max'), String(limits.pids))
      return
    }
    await writeFile(join(this.dirs.memory, 'memory.limit_in_bytes'), memoryBytes)
    await writeOptional(join(this.dirs.memory, 'memory.memsw.limit_in_bytes'), memoryBytes)
    await writeFile(join(this.dirs.cpu, 'cpu.cfs_period_us'), String(CFS_PERIOD_US))
    await writeFile(join(this.dirs.cpu, 'cpu.cfs_quota_us'), String(quota))
    await writeFile(join(this.dirs.pids, 'pids.max'), String(limits.pids))
  }

  /** Moves a process (and so everything it later forks) into the group. */
  async enter (pid: number): Promise<void> {
    for (const dir of this.uniqueDirs()) await writeFile(join(dir, 'cgroup.procs'), String(pid))
  }

  async members (): Promise<number[]> {
    const dir = this.layout === 'v2' ? this.dirs.unified : this.dirs.pids
    // A group already removed has no members; one that cannot be read now (EMFILE) is not taken for empty.
    const text = await readFile(join(dir, 'cgroup.procs'), 'utf8').catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return ''
      throw new ProcUnreadableError(error.code ?? 'EIO', join(dir, 'cgroup.procs'))
    })
    return text.split('\n').filter(line => line !== '').map(Number)
  }

  async stats (): Promise<InstanceStats> {
    if (this.layout === 'v2') {
      const cpu = await readFile(join(this.dirs.unified, 'cpu.stat'), 'utf8')
      const usage = /^usage_usec (\d+)$/m.exec(cpu)
      return {
        cpuSeconds: usage === null ? 0 : Number(usage[1]) / 1e6,
        memoryBytes: Number(await readFile(join(this.dirs.unified, 'memory.current'), 'utf8'))
      }
    }
    return {
      cpuSeconds: Number(await readFile(join(this.dirs.cpuacct, 'cpuacct.usage'), 'utf8')) / 1e9,
      memoryBytes: Number(await readFile(join(this.dirs.memory, 'memory.usage_in_bytes'), 'utf8'))
    }
  }

  /**
   * Removes the group. The kernel refuses (EBUSY) while exiting processes are
   * still being released, so this retries for a while; a group still busy
   * after that is left for the next removal.
   */
  async remove (): Promise<void> {
    let left = this.uniqueDirs()
    for (let attempt = 0; attempt < REMOVE_ATTEMPTS && left.length > 0; attempt++) {
      if (attempt > 0) await sleep(REMOVE_RETRY_MS)
      const busy: string[] = []
      for (const dir of left) {
        await rmdir(dir).catch((error: NodeJS.ErrnoException) => { if (error.code !== 'ENOENT') busy.push(dir) })
      }
      left = busy
    }
  }

  private uniqueDirs (): string[] {
    return [...new Set(Object.values(this.dirs))]
  }
}

/**
 * The driver's own parent group under the host's, named by its scope, so
 * that the groups a driver finds there after a restart are its own and
 * never those of another server on the same host.
 */
export function scopedCgroups (host: CgroupHost, scope: string): CgroupHost {
  const parents = host.parents.map((parent) => join(parent, scope))
  for (const parent of new Set(parents)) mkdirSync(parent, { recursive: true })
  if (host.layout === 'v2') writeFileSync(join(parents[0], 'cgroup.subtree_control'), '+memory +cpu +pids')
  return { layout: host.layout, parents }
}

/** The names of the groups under the parent, e.g. `instance-…` and `build-…`. */
export async function listGroups (host: CgroupHost): Promise<string[]> {
  const parent = host.layout === 'v2' ? host.parents[0] : host.parents[V1_CONTROLLERS.indexOf('pids')]
  const entries = await readdir(parent, { withFileTypes: true }).catch(() => [])
  return entries.filter((entry) => entry.isDirectory()).map((entry) => entry.name)
}

/** Tries to remove the scope's own parent groups, which succeeds once they are empty. */
export async function removeScope (host: CgroupHost): Promise<void> {
  for (const parent of new Set(host.parents)) await rmdir(parent).catch(() => {})
}

async function writeOptional (file: string, value: string): Promise<void> {
  if (existsSync(file)) await writeFile(file, value)
}

/**
 * Finds a writable cgroup layout under `root` and creates the parent group
 * `name` in it. Returns the host or the reason none is usable.
 */
export function probeCgroups (root: string, name: string): CgroupHost | { missing: string } {
  if (existsSync(join(root, 'cgroup.controllers'))) {
    const parent = join(root, name)
    try {
      const available = readFileSync(join(root, 'cgroup.controllers'), 'utf8').split(/\s+/)
      const lacking = ['memory', 'cpu', 'pids'].filter(controller => !available.includes(controller))
      if (lacking.length > 0) return { missing: `cgroup v2 at ${root} lacks the ${lacking.join(', ')} controller(s)` }
      writeFileSync(join(root, 'cgroup.subtree_control'), '+memory +cpu +pids')
      mkdirSync(parent, { recursive: true })
      writeFileSync(join(parent, 'cgroup.subtree_control'), '+memory +cpu +pids')
      return { layout: 'v2', parents: [parent] }
    } catch (error) {
      return { missing: `cgroup v2 at ${root} is not writable (${(error as NodeJS.ErrnoException).code ?? String(error)})` }
    }
  }
  const parents: string[] = []
  for (const controller of V1_CONTROLLERS) {
    const mount = join(root, controller)
    if (!existsSync(join(mount, 'cgroup.procs'))) return { missing: `no cgroup v1 ${controller} hierarchy at ${mount} and no cgroup v2 at ${root}` }
    try {
      mkdirSync(join(mount, name), { recursive: true })
    } catch (error) {
      return { missing: `cgroup v1 ${controller} hierarchy at ${mount} is not writable (${(error as NodeJS.ErrnoException).code ?? String(error)})` }
    }
    parents.push(join(mount, name))
  }
  return { layout: 'v1', parents }
}
