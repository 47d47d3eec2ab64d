import { createHash } from 'node:crypto'
import { createServer, type AddressInfo, type Server as NetServer, type Socket } from 'node:net'
import ssh2, { type ClientInfo, type Connection, type Server, type ServerChannel } from 'ssh2'
import { AppError } from '../platform/errors.js'
import { keepListening } from '../platform/descriptors.js'
import type { SshLimits } from './config.js'
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
  /** How the greeting of a session without a command names its caller: a user, or a deploy key's repository. */
  describe: (caller: GitCaller) => Promise<string>
  transport: Transport
  limits: SshLimits
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

const socketKey = (address: string | undefined, port: number | undefined): string => `${address ?? ''}|${port ?? 0}`

/**
 * Git over SSH: public-key authentication against users' registered keys and
 * deploy keys, then exactly one `git-upload-pack` or `git-receive-pack` per
 * session, with the permissions and push policy of git over HTTP. No shell,
 * no port forwarding, no other command: `ssh` without one is greeted by name
 * and told so, as GitHub and Gitea do, so a user can test their key.
 *
 * What one client can hold is capped before ssh2 sees a byte: connections in
 * all and per address are counted on the TCP socket, a connection must sign
 * in within the auth timeout (a client that never speaks holds nothing
 * longer), may fail to sign in only so many times, and is closed once no git
 * data has moved on it for the idle timeout. ssh2's keepalive pings do not
 * count as data, so a connection kept open without a command ends too.
 */
export class GitSshServer {
  private readonly server: Server
  private readonly listener: NetServer
  private readonly connections = new Set<Connection>()
  private readonly perAddress = new Map<string, number>()
  private readonly signInDeadlines = new Map<string, NodeJS.Timeout>()
  /** Sockets admitted whose client has not sent its SSH version line yet: ssh2 knows nothing of them. */
  private readonly beforeHandshake = new Map<string, Socket>()
  private open = 0

  constructor (private readonly deps: SshGitDeps) {
    this.server = new ssh2.Server({ hostKeys: [deps.hostKey], ident: 'Plinth' }, (client, info) => { this.accept(client, info) })
    this.listener = createServer((socket) => { this.admit(socket) })
  }

  async listen (port: number, host: string): Promise<number> {
    await new Promise<void>((resolve, reject) => {
      this.listener.once('error', reject)
      // Only the cluster's lead listens here: bound in this process (services/platform/cluster.ts).
      this.listener.listen({ port, host, exclusive: true }, () => { this.listener.off('error', reject); resolve() })
    })
    keepListening(this.listener, 'ssh', (details, message) => { this.deps.log.warn(details, message) })
    return (this.listener.address() as AddressInfo).port
  }

  async close (): Promise<void> {
    for (const client of this.connections) client.end()
    for (const socket of this.beforeHandshake.values()) socket.destroy()
    await new Promise<void>((resolve) => { this.listener.close(() => { resolve() }) })
  }

  /** Counts a new TCP connection against the caps, arms its sign-in deadline, and hands it to ssh2. */
  private admit (socket: Socket): void {
    const { maxConnections, maxConnectionsPerAddress, authTimeoutSeconds } = this.deps.limits
    const address = socket.remoteAddress ?? ''
    const fromAddress = this.perAddress.get(address) ?? 0
    if (this.open >= maxConnections || fromAddress >= maxConnectionsPerAddress) {
      this.deps.log.info({ address, open: this.open, fromAddress }, 'ssh connection refused: too many open')
      socket.destroy()
      return
    }
    this.open++
    this.perAddress.set(address, fromAddress + 1)
    const key = socketKey(address, socket.remotePort)
    const deadline = setTimeout(() => { socket.destroy() }, authTimeoutSeconds * 1000).unref()
    this.signInDeadlines.set(key, deadline)
    this.beforeHandshake.set(key, socket)
    socket.once('close', () => {
      clearTimeout(deadline)
      this.signInDeadlines.delete(key)
      this.beforeHandshake.delete(key)
      this.open--
      const left = (this.perAddress.get(address) ?? 1) - 1
      if (left === 0) this.perAddress.delete(address)
      else this.perAddress.set(address, left)
    })
    this.server.injectSocket(socket)
  }

  private accept (client: Connection, info: ClientInfo): void {
    this.beforeHandshake.delete(socketKey(info.ip, info.port))
    this.connections.add(client)
    let fingerprint: string | null = null
    let failures = 0
    let idle: NodeJS.Timeout | null = null
    const touch = (): void => { idle?.refresh() }
    client.on('close', () => {
      this.connections.delete(client)
      if (idle !== null) clearTimeout(idle)
    })
    client.on('error', (error) => { this.deps.log.info({ err: error }, 'ssh client error') })
    client.on('authentication', (ctx) => {
      const refuse = (): void => {
        // OpenSSH opens with a `none` request to learn the methods; it is no attempt.
        if (ctx.method !== 'none' && ++failures >= this.deps.limits.maxAuthAttempts) {
          this.deps.log.info({ address: info.ip, failures }, 'ssh connection closed: too many failed sign-in attempts')
          // No failure reply: the client would offer its next key before the disconnect reached it.
          client.end()
          return
        }
        ctx.reject(['publickey'])
      }
      if (ctx.method !== 'publickey') { refuse(); return }
      const offered = fingerprintOf(ctx.key.data)
      this.deps.callerFor(offered).then((known) => {
        if (known === null) { refuse(); return }
        // Without a signature the client only asks whether this key would do.
        if (ctx.signature === undefined || ctx.blob === undefined) { ctx.accept(); return }
        const key = ssh2.utils.parseKey(ctx.key.data)
        if (key instanceof Error || key.verify(ctx.blob, ctx.signature, ctx.hashAlgo) !== true) { refuse(); return }
        fingerprint = offered
        ctx.accept()
      }, (error: unknown) => {
        this.deps.log.warn({ err: error }, 'ssh key lookup failed')
        refuse()
      })
    })
    client.on('ready', () => {
      const deadline = this.signInDeadlines.get(socketKey(info.ip, info.port))
      if (deadline !== undefined) clearTimeout(deadline)
      idle = setTimeout(() => { client.end() }, this.deps.limits.idleTimeoutSeconds * 1000).unref()
      client.on('session', (acceptSession) => {
        const session = acceptSession()
        let protocol: string | null = null
        session.on('env', (accept, _reject, info) => {
          if (info.key === 'GIT_PROTOCOL') protocol = gitProtocol(info.val)
          accept?.()
        })
        // Granted, though none is ever made: `ssh git@host` from a terminal asks for one, and the greeting is all it gets.
        let terminal = false
        session.on('pty', (accept) => { terminal = true; accept?.() })
        session.on('shell', (accept) => {
          const channel = accept()
          if (fingerprint === null) { refuse(channel, 'not authenticated'); return }
          void this.greet(channel, fingerprint, terminal ? '\r\n' : '\n')
        })
        session.on('exec', (accept, _reject, command) => {
          const channel = accept()
          if (fingerprint === null) { refuse(channel, 'not authenticated'); return }
          touch()
          channel.on('data', touch)
          void this.exec(channel, fingerprint, command.command, protocol, touch)
        })
      })
    })
  }

  /** What `ssh -T git@host` shows: who the key signs in as, and that only git is served. Exit 1, as GitHub's. */
  private async greet (channel: ServerChannel, fingerprint: string, newline: string): Promise<void> {
    try {
      const caller = await this.deps.callerFor(fingerprint)
      if (caller === null) { refuse(channel, 'this key is no longer registered'); return }
      channel.stderr.write(`Hi ${await this.deps.describe(caller)}! You've successfully authenticated, but Plinth does not provide shell access: only git clone, fetch and push are served over SSH.${newline}`)
      channel.exit(1)
      channel.end()
    } catch (error) {
      this.deps.log.warn({ err: error }, 'ssh greeting failed')
      refuse(channel, 'internal error')
    }
  }

  private async exec (channel: ServerChannel, fingerprint: string, command: string, protocol: string | null, touch: () => void): Promise<void> {
    const parsed = parseGitCommand(command)
    if (parsed === null) { refuse(channel, 'only git clone, fetch and push are served here'); return }
    let allowed: { repo: Repo, policy?: PushPolicy }
    try {
      // Asked again for every command: one connection may carry many, and the key or its user may be gone since sign-in.
      const caller = await this.deps.callerFor(fingerprint)
      if (caller === null) { refuse(channel, 'this key is no longer registered'); return }
      allowed = await this.deps.authorize(caller, parsed.projectId, parsed.slug, parsed.service)
    } catch (error) {
      refuse(channel, error instanceof AppError && error.status < 500 ? `${error.message} (${error.code})` : 'internal error')
      if (!(error instanceof AppError) || error.status >= 500) this.deps.log.warn({ err: error }, 'ssh git request failed')
      return
    }
    const child = this.deps.transport.session(allowed.repo, parsed.service, protocol, allowed.policy)
    child.stdout.on('data', touch)
    child.stderr.on('data', touch)
    channel.pipe(child.stdin)
    child.stdout.pipe(channel, { end: false })
    child.stderr.pipe(channel.stderr, { end: false })
    child.stdin.on('error', () => {})
    // The client hanging up stops git; git finishing ends the channel with its exit status.
    channel.on('close', () => { if (child.exitCode === null) child.kill('SIGKILL') })
    child.on('close', (code) => {
      // A negative code is a git that never started.
      channel.exit(code === null || code < 0 ? 128 : code)
      channel.end()
    })
  }
}

function refuse (channel: ServerChannel, message: string): void {
  channel.stderr.write(`Plinth: ${message}\n`)
  channel.exit(128)
  channel.end()
}
