import { createHash } from 'node:crypto'
import type { AddressInfo } from 'node:net'
import ssh2, { type Connection, type Server, type ServerChannel } from 'ssh2'
import { AppError } from '../errors.js'
import type { GitCaller, GitService } from './access.js'
import type { PushPolicy } from './protection.js'
import type { Repo } from './repositories.js'
import type { Transport } from './transport.js'
import { gitProtocol } from './transport.js'

export interface SshGitDeps {
  /** The host key, OpenSSH or PEM private key text. */
  hostKey: string
  /** Who a public key (by its `SHA256:` fingerprint) stands for: a user's registered key, a deploy key, or nobody. */
  callerFor: (fingerprint: string) => Promise<GitCaller | null>
  /** The repository at `projectId/slug` once the caller may use `service` on it; throws the same AppErrors as HTTP. */
  authorize: (caller: GitCaller, projectId: string, slug: string, service: GitService) => Promise<{ repo: Repo, policy?: PushPolicy }>
  transport: Transport
  log: { info: (details: object, message: string) => void, warn: (details: object, message: string) => void }
}

// What git sends over SSH: `git-upload-pack '/<projectId>/<slug>.git'` (scp-style URLs drop the leading slash).
const COMMAND = /^git[- ](upload-pack|receive-pack) '\/?([0-9A-Za-z_-]{1,64})\/([A-Za-z0-9][A-Za-z0-9._-]{0,103})'$/

export function fingerprintOf (keyBlob: Buffer): string {
  return `SHA256:${createHash('sha256').update(keyBlob).digest('base64').replace(/=+$/, '')}`
}

/** A command a client may run, or null: only the two git services, on a path the server resolves itself. */
export function parseGitCommand (command: string): { service: GitService, projectId: string, slug: string } | null {
  const match = COMMAND.exec(command)
  if (match === null) return null
  return { service: match[1] as GitService, projectId: match[2], slug: match[3].replace(/\.git$/, '') }
}

/**
 * Git over SSH: public-key authentication against users' registered keys and
 * deploy keys, then exactly one `git-upload-pack` or `git-receive-pack` per
 * session, with the permissions and push policy of git over HTTP. No shell,
 * no port forwarding, no other command.
 */
export class GitSshServer {
  private readonly server: Server
  private readonly connections = new Set<Connection>()

  constructor (private readonly deps: SshGitDeps) {
    this.server = new ssh2.Server({ hostKeys: [deps.hostKey], ident: 'Plinth' }, (client) => { this.accept(client) })
  }

  async listen (port: number, host: string): Promise<number> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject)
      this.server.listen(port, host, () => { this.server.off('error', reject); resolve() })
    })
    return (this.server.address() as AddressInfo).port
  }

  async close (): Promise<void> {
    for (const client of this.connections) client.end()
    await new Promise<void>((resolve) => { this.server.close(() => { resolve() }) })
  }

  private accept (client: Connection): void {
    this.connections.add(client)
    let caller: GitCaller | null = null
    client.on('close', () => { this.connections.delete(client) })
    client.on('error', (error) => { this.deps.log.info({ err: error }, 'ssh client error') })
    client.on('authentication', (ctx) => {
      if (ctx.method !== 'publickey') { ctx.reject(['publickey']); return }
      this.deps.callerFor(fingerprintOf(ctx.key.data)).then((known) => {
        if (known === null) { ctx.reject(['publickey']); return }
        // Without a signature the client only asks whether this key would do.
        if (ctx.signature === undefined || ctx.blob === undefined) { ctx.accept(); return }
        const key = ssh2.utils.parseKey(ctx.key.data)
        if (key instanceof Error || key.verify(ctx.blob, ctx.signature, ctx.hashAlgo) !== true) { ctx.reject(['publickey']); return }
        caller = known
        ctx.accept()
      }, (error: unknown) => {
        this.deps.log.warn({ err: error }, 'ssh key lookup failed')
        ctx.reject(['publickey'])
      })
    })
    client.on('ready', () => {
      client.on('session', (acceptSession) => {
        const session = acceptSession()
        let protocol: string | null = null
        session.on('env', (accept, _reject, info) => {
          if (info.key === 'GIT_PROTOCOL') protocol = gitProtocol(info.val)
          accept?.()
        })
        session.on('pty', (_accept, reject) => { reject?.() })
        session.on('shell', (_accept, reject) => { reject?.() })
        session.on('exec', (accept, _reject, info) => {
          const channel = accept()
          if (caller === null) { refuse(channel, 'not authenticated'); return }
          void this.exec(channel, caller, info.command, protocol)
        })
      })
    })
  }

  private async exec (channel: ServerChannel, caller: GitCaller, command: string, protocol: string | null): Promise<void> {
    const parsed = parseGitCommand(command)
    if (parsed === null) { refuse(channel, 'only git clone, fetch and push are served here'); return }
    let allowed: { repo: Repo, policy?: PushPolicy }
    try {
      allowed = await this.deps.authorize(caller, parsed.projectId, parsed.slug, parsed.service)
    } catch (error) {
      refuse(channel, error instanceof AppError && error.status < 500 ? `${error.message} (${error.code})` : 'internal error')
      if (!(error instanceof AppError) || error.status >= 500) this.deps.log.warn({ err: error }, 'ssh git request failed')
      return
    }
    const child = this.deps.transport.session(allowed.repo, parsed.service, protocol, allowed.policy)
    channel.pipe(child.stdin)
    child.stdout.pipe(channel, { end: false })
    child.stderr.pipe(channel.stderr, { end: false })
    child.stdin.on('error', () => {})
    // The client hanging up stops git; git finishing ends the channel with its exit status.
    channel.on('close', () => { if (child.exitCode === null) child.kill('SIGKILL') })
    child.on('close', (code) => {
      channel.exit(code ?? 128)
      channel.end()
    })
  }
}

function refuse (channel: ServerChannel, message: string): void {
  channel.stderr.write(`Plinth: ${message}\n`)
  channel.exit(128)
  channel.end()
}
