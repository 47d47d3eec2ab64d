import { isIP } from 'node:net'
import { sep } from 'node:path'
import { ConfigError, UnavailableAtStartError, type Env } from './platform/config-env.js'
import { parseServerConfig, type HttpTimeouts, type LogLevel, type ServerConfig } from './platform/server-config.js'
import { parseDnsConfig, type DnsConfig } from './dns/config.js'
import { parseGitConfig, type GitConfig } from './git/config.js'
import { parseHostingConfig, parseHostingTlsConfig, type HostingConfig, type HostingTlsConfig } from './hosting/config.js'
import { parseJobsConfig, type JobsConfig } from './jobs/config.js'
import { parseIdentityConfig, type IdentityConfig } from './identity/config.js'
import { parseLlmConfig, type LlmConfig } from './llm/config.js'
import { parseMetricsConfig, type MetricsConfig } from './metrics/config.js'
import { parseAuditConfig, type AuditConfig } from './audit/config.js'
import { parseProjectEmailConfig, type ProjectEmailConfig } from './projects/email-config.js'
import { parseProjectOauthConfig, type ProjectOauthConfig } from './projects/oauth-config.js'
import { parseRealtimeConfig, type RealtimeConfig } from './realtime/config.js'
import { parseAssistantConfig, type AssistantConfig } from './assistant/config.js'
import { parseWebhooksConfig, type WebhooksConfig } from './webhooks/config.js'
import { parseBackupConfig, type BackupConfig } from './backup/config.js'

export { ConfigError, UnavailableAtStartError }
export type { AuditConfig, BackupConfig, DnsConfig, GitConfig, HostingConfig, HostingTlsConfig, HttpTimeouts, IdentityConfig, JobsConfig, LlmConfig, LogLevel, MetricsConfig, ServerConfig, WebhooksConfig }

/**
 * Configuration comes from the environment only, validated once at start:
 * a bad value stops the server with a message naming the variable. The
 * server's own settings (services/platform/server-config.ts) sit at the top
 * level; each family's are under its name, parsed by its own config.ts.
 */
export interface Config extends ServerConfig {
  /** Credentials, their lifetimes, sign-in rate limits and single sign-on (services/identity/config.ts). */
  identity: IdentityConfig
  /** Git hosting (docs/git.md). */
  git: GitConfig
  /** DNS: the built-in authoritative server and the gateway hostnames point at (docs/dns.md). */
  dns: DnsConfig
  /** App hosting (docs/hosting.md). */
  hosting: HostingConfig
  /** Hosting: how custom hostnames are verified and where their TLS certificates come from (docs/hosting.md). */
  hostingTls: HostingTlsConfig
  /** The job worker's slots on this node, by lane (docs/architecture.md, "Background work"). */
  jobs: JobsConfig
  /** Outbound webhooks: what receivers may be, timeouts, retries and when a failing webhook is disabled (docs/webhooks.md). */
  webhooks: WebhooksConfig
  /** LLM credentials and settings: which internal hosts base URLs may reach, the provider call's deadline, the platform defaults (docs/llm.md). */
  llm: LlmConfig
  /** Prometheus metrics: the token `/metrics` asks for, or a listener of its own (docs/operations.md, "Metrics"). */
  metrics: MetricsConfig
  /** The audit log: how long entries are kept (docs/audit.md). */
  audit: AuditConfig
  /** End users' email flows: which internal hosts a project's SMTP server may be at, link lifetime, per-address limit (docs/projects.md). */
  projectEmail: ProjectEmailConfig
  projectOauth: ProjectOauthConfig
  /** Realtime streams of record changes: retention for resuming, polling of the shared log, rechecks and limits (docs/realtime.md). */
  realtime: RealtimeConfig
  /** Assistant runs: the wall time between pauses and the largest tool answer handed to a model (docs/assistant.md). */
  assistant: AssistantConfig
  /** Backups through the API: where they are kept, their schedule and retention, an S3-compatible bucket (docs/operations.md, "Backups"). */
  backup: BackupConfig
}

/**
 * The repositories', the hosting's and the backups' folders are owned whole:
 * one inside another, or any being DATA_DIR itself, would mix their trees (a
 * project's repository folder among build folders; a backup and its restore
 * could not tell them apart; backups inside the trees they back up).
 */
function checkSeparateRoots (dataDir: string, roots: Array<[variable: string, dir: string]>): void {
  const inside = (dir: string, parent: string): boolean => dir === parent || dir.startsWith(parent.endsWith(sep) ? parent : parent + sep)
  for (const [variable, dir] of roots) {
    if (dir === dataDir) throw new ConfigError(variable, `must not be DATA_DIR itself (${dir}): give it a folder of its own`)
  }
  for (const [index, [secondName, second]] of roots.entries()) {
    for (const [firstName, first] of roots.slice(0, index)) {
      if (inside(first, second) || inside(second, first)) throw new ConfigError(secondName, `must not be ${firstName} (${first}) or lie inside it, nor hold it: each is a folder of its own`)
    }
  }
}

export function loadConfig (env: Env = process.env): Config {
  const server = parseServerConfig(env)
  const { port, host, dataDir, publicUrl } = server
  const git = parseGitConfig(env, dataDir)
  const hosting = parseHostingConfig(env, { dataDir, apiPort: port, apiHost: host })
  const backup = parseBackupConfig(env, dataDir)
  checkSeparateRoots(dataDir, [['GIT_REPOS_DIR', git.reposDir], ['HOSTING_DIR', hosting.dir], ['BACKUP_DIR', backup.dir]])
  return {
    ...server,
    identity: parseIdentityConfig(env, { publicUrl }),
    git,
    dns: parseDnsConfig(env),
    hosting,
    hostingTls: parseHostingTlsConfig(env),
    jobs: parseJobsConfig(env),
    webhooks: parseWebhooksConfig(env),
    llm: parseLlmConfig(env),
    metrics: parseMetricsConfig(env),
    audit: parseAuditConfig(env),
    projectEmail: parseProjectEmailConfig(env),
    projectOauth: parseProjectOauthConfig(env),
    realtime: parseRealtimeConfig(env),
    assistant: parseAssistantConfig(env),
    backup
  }
}

/**
 * The names the deployment answers for itself: its nameservers, the
 * gateway's host, PUBLIC_URL's host (unless an address) and the apps domain.
 * No project may take one, or a name around or under one, as a built-in zone
 * or an app's hostname, or it would answer for the platform.
 */
export function platformHosts (config: Pick<Config, 'publicUrl' | 'dns' | 'hosting'>): string[] {
  const publicHost = new URL(config.publicUrl).hostname.toLowerCase()
  const named = isIP(publicHost.replace(/^\[|\]$/g, '')) === 0 ? [publicHost] : []
  return [...config.dns.nameservers, ...(config.dns.gateway.host === null ? [] : [config.dns.gateway.host]), ...named, config.hosting.appsDomain]
}
