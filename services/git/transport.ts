import type { ChildProcessWithoutNullStreams } from 'node:child_process'
import { performance } from 'node:perf_hooks'
import type { GitCli } from './git-cli.js'
import type { GitService } from './access.js'
import type { PushPolicy } from './protection.js'
import { POLICY_ENV } from './pre-receive.js'
import type { Repo } from './repositories.js'

// `version=2`, or colon-separated `key` / `key=value` items as git sends them; anything else is dropped.
const GIT_PROTOCOL = /^[a-z0-9-]{1,32}(=[A-Za-z0-9._-]{1,64})?(:[a-z0-9-]{1,32}(=[A-Za-z0-9._-]{1,64})?){0,15}$/

/** The `Git-Protocol` header if it is well formed, for GIT_PROTOCOL; null otherwise. */
export function gitProtocol (header: string | string[] | undefined): string | null {
  const value = Array.isArray(header) ? header[0] : header
  return value !== undefined && GIT_PROTOCOL.test(value) ? value : null
}

export function wantsV2 (protocol: string | null): boolean {
  return protocol !== null && protocol.split(':').includes('version=2')
}

/** `# service=git-<service>` as one pkt-line, then a flush: what a v0 ref advertisement over HTTP starts with. */
export function serviceAnnouncement (service: GitService): Buffer {
  const line = `# service=git-${service}\n`
  return Buffer.from(`${(line.length + 4).toString(16).padStart(4, '0')}${line}0000`)
}

/**
 * The server side of git's smart protocol: `git upload-pack` and
 * `git receive-pack` in stateless-RPC mode, as git http-backend runs them.
 * Every push runs the shared pre-receive hook with the caller's policy and
 * checks every object it receives.
 */
export class Transport {
  private readonly pushedHooks: Array<(repo: Repo) => Promise<void>> = []

  constructor (private readonly deps: {
    git: GitCli
    hooksDir: string
    /** Told when a git run serving a client ends (metrics): not for ref advertisements, which carry no pack. */
    onRun?: (service: GitService, transport: 'http' | 'ssh', seconds: number, ok: boolean) => void
  }) {}

  /** Runs after every receive-pack that exited cleanly (refs may have moved), whichever transport carried it. */
  onPushed (hook: (repo: Repo) => Promise<void>): void {
    this.pushedHooks.push(hook)
  }

  private watched (repo: Repo, service: GitService, extra: string[] | null, child: ChildProcessWithoutNullStreams): ChildProcessWithoutNullStreams {
    const onRun = this.deps.onRun
    if (onRun !== undefined && extra?.includes('--advertise-refs') !== true) {
      // A stateless RPC is one HTTP request; an SSH session is the whole conversation.
      const started = performance.now()
      child.once('close', (code) => { onRun(service, extra === null ? 'ssh' : 'http', (performance.now() - started) / 1000, code === 0) })
    }
    if (service !== 'receive-pack' || extra?.includes('--advertise-refs') === true) return child
    child.once('close', (code) => { if (code === 0) void Promise.allSettled(this.pushedHooks.map(async (hook) => { await hook(repo) })) })
    return child
  }

  advertise (repo: Repo, service: GitService, protocol: string | null, policy?: PushPolicy): ChildProcessWithoutNullStreams {
    return this.spawn(repo, service, protocol, policy, ['--advertise-refs'])
  }

  serve (repo: Repo, service: GitService, protocol: string | null, policy?: PushPolicy): ChildProcessWithoutNullStreams {
    return this.spawn(repo, service, protocol, policy, [])
  }

  /** A whole conversation at once, as over SSH: the advertisement, then the client's requests on the same stream. */
  session (repo: Repo, service: GitService, protocol: string | null, policy?: PushPolicy): ChildProcessWithoutNullStreams {
    return this.spawn(repo, service, protocol, policy, null)
  }

  private spawn (repo: Repo, service: GitService, protocol: string | null, policy: PushPolicy | undefined, extra: string[] | null): ChildProcessWithoutNullStreams {
    const env: Record<string, string> = {}
    if (protocol !== null) env.GIT_PROTOCOL = protocol
    if (policy !== undefined) env[POLICY_ENV] = JSON.stringify(policy)
    const config = ['-c', `core.hooksPath=${this.deps.hooksDir}`, '-c', 'receive.fsckObjects=true', '-c', 'receive.denyDeleteCurrent=refuse']
    const mode = extra === null ? [] : ['--stateless-rpc', ...extra]
    return this.watched(repo, service, extra, this.deps.git.spawn(null, [...config, service, ...mode, repo.gitDir], env))
  }
}
