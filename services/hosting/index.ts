import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import type { Clock } from '../platform/clock.js'
import type { SecretBox } from '../platform/crypto.js'
import type { IdGenerator } from '../platform/ids.js'
import { readDescriptorLimit } from '../platform/descriptors.js'
import type { Store } from '../store/types.js'
import type { UploadSessions } from '../files/uploads.js'
import type { DnsConfig } from '../dns/config.js'
import type { DnsServices } from '../dns/index.js'
import type { GitServices } from '../git/index.js'
import type { HostingConfig, HostingTlsConfig } from './config.js'
import { HostRoutes } from './route-table.js'
import { Timeline } from './timeline.js'
import { AppSecrets } from './secrets.js'
import { ProjectEnvironment } from './project-variables.js'
import { AppLogs } from './logs.js'
import { Releases } from './releases.js'
import { DEPLOY_JOB, Deployments } from './deployments.js'
import { HostingApps, RECONCILE_JOB } from './apps.js'
import { AppSources } from './app-sources.js'
import { ExternalGitGuard } from './external-git.js'
import { Traffic } from './traffic.js'
import type { RuntimeDriver } from './runtime.js'
import { ProcessDriver, probeSandbox } from './process-driver/index.js'
import { ContainerDriver } from './container-driver/index.js'
import { Gateway, type ClientTimeouts } from './gateway/gateway.js'
import { Hostnames, type HostingEventListener } from './hostnames.js'
import { Certificates } from './certificates.js'

/** What the hosting family is built from; plugins/hosting.ts passes the app's. */
export interface HostingPorts {
  store: Store
  clock: Clock
  /** The Store's time: log lines of instances on different nodes are numbered on it, so they sort as they were written. */
  storeClock: Clock
  newId: IdGenerator
  secrets: SecretBox
  hosting: HostingConfig
  tls: HostingTlsConfig
  /** Where hostnames must point (DNS_GATEWAY_*). */
  gatewayTarget: DnsConfig['gateway']
  /** The platform's own names, which no app's hostname may take (`platformHosts`). */
  reservedHosts: string[]
  /** The platform's folders (DATA_DIR, HOSTING_DIR, the repositories): hidden from sandboxes even where one lies inside what they see. */
  hiddenPaths: string[]
  /** What a hosted repository's clone URL starts with (`${PUBLIC_URL}/git/`). */
  cloneUrlPrefix: string
  /** The gateway's limits on slow clients (HEADERS_TIMEOUT_SECONDS, REQUEST_TIMEOUT_SECONDS). */
  clientTimeouts: ClientTimeouts
  uploads: UploadSessions
  /** The DNS family: the gateway instructions hostnames show, and zones and records for DNS-01 challenges. */
  dns: Pick<DnsServices, 'gateway' | 'zones' | 'records'>
  /** The git family's repositories, its one reader (its pack cache shared) and its git runner. */
  git: Pick<GitServices, 'repositories' | 'reader' | 'git'>
  /** Queues a keyed job for an app (deploy, reconcile): one at a time per app. */
  enqueueKeyed: (type: string, appId: string, payload: { appId: string }) => Promise<void>
  /** Whether this process runs the instances and the gateway (WORKERS: the lead); another hands route changes to it. */
  supervises: boolean
  /** Where the gateway says what it decided on its own. */
  log?: { warn: (details: object, message: string) => void }
  onError: (error: unknown) => void
}

export interface HostingServices {
  apps: HostingApps
  deployments: Deployments
  sources: AppSources
  releases: Releases
  secrets: AppSecrets
  /** The project variables deployments take; the auxiliary area hands in their source (`use`) and tells of changes. */
  projectEnvironment: ProjectEnvironment
  logs: AppLogs
  timeline: Timeline
  traffic: Traffic
  routes: HostRoutes
  driver: RuntimeDriver
  gateway: Gateway
  hostnames: Hostnames
  certificates: Certificates
}

function createDriver (ports: HostingPorts): RuntimeDriver {
  const { hosting, clock, newId } = ports
  if (hosting.driver === 'container' && hosting.container !== null) {
    return new ContainerDriver({ ...hosting.container, artifactsDir: join(hosting.dir, 'artifacts'), clock, newId, allowedRanges: hosting.appAllowedRanges })
  }
  return new ProcessDriver({ root: join(hosting.dir, 'driver'), clock, sandbox: probeSandbox({ network: { allowed: hosting.appAllowedRanges } }), newId, hiddenPaths: ports.hiddenPaths })
}

/**
 * Builds the hosting family's services on their ports, connects them and
 * creates their indexes. Nothing is started: the gateway listens and the
 * driver's instances are adopted when the plugin says so.
 */
export async function buildHostingServices (ports: HostingPorts): Promise<HostingServices> {
  const { store, clock, newId, secrets: box, hosting, onError } = ports
  const workDir = join(hosting.dir, 'sources')
  if (hosting.enabled) mkdirSync(workDir, { recursive: true })
  const driver = createDriver(ports)
  const deps = { clock, newId }
  const routes = new HostRoutes()
  const timeline = new Timeline(store, deps)
  const secrets = new AppSecrets(store, { clock, box })
  const projectEnvironment = new ProjectEnvironment(store, { box, timeline })
  const logs = new AppLogs(store, { ...deps, clock: ports.storeClock, onError, limits: hosting.logs })
  const traffic = new Traffic(store, { clock, projectOf: (appId) => routes.routeOf(appId)?.projectId ?? null })
  const onEvent: HostingEventListener = async (kind, details) => {
    await timeline.add({ _id: details.appId, projectId: details.projectId }, kind, `${kind.replace('.', ' ').replace('_', ' ')}: ${details.hostname}`).catch(onError)
  }
  const hostnames = new Hostnames(store, { ...deps, gateway: ports.dns.gateway, target: ports.gatewayTarget, resolvers: ports.tls.dnsResolvers, reservedHosts: ports.reservedHosts, onEvent })
  const certificates = new Certificates(store, {
    clock,
    secrets: box,
    hostnames,
    dns: { zones: ports.dns.zones, records: ports.dns.records },
    acme: { directoryUrl: ports.tls.acmeDirectoryUrl, email: ports.tls.acmeEmail, caCertificates: ports.tls.acmeCaCertificates },
    onEvent,
    onError
  })
  const releases = new Releases(store, {
    ...deps,
    driver,
    routes,
    logs,
    secrets,
    timeline,
    projectEnvironment,
    hostsOf: async (record) => [`${record.name}.${hosting.appsDomain}`, ...(await hostnames.list(record.projectId, record._id)).filter((one) => one.status === 'verified').map((one) => one.hostname)],
    limits: hosting.instanceLimits,
    healthTimeoutMs: hosting.healthTimeoutMs,
    stopGraceMs: hosting.stopGraceMs,
    handOff: ports.supervises ? undefined : async (appId) => { await ports.enqueueKeyed(RECONCILE_JOB, appId, { appId }) },
    onError
  })
  // Deployments and sources need each other: a deployment prepares its source, a push deploys.
  let sources: AppSources | null = null
  const deployments = new Deployments(store, {
    ...deps,
    driver,
    releases,
    logs,
    secrets,
    timeline,
    projectEnvironment,
    workDir,
    prepareSource: async (record, deployment, dir) => await (sources as AppSources).prepare(record, deployment, dir),
    wake: async (appId) => { await ports.enqueueKeyed(DEPLOY_JOB, appId, { appId }) },
    addBuildSeconds: (record, seconds) => { traffic.addBuildSeconds(record, seconds) },
    buildTimeoutMs: hosting.buildTimeoutMs,
    buildsPerProject: hosting.buildsPerProject
  })
  const { repositories, reader, git } = ports.git
  sources = new AppSources({
    uploads: ports.uploads,
    deployments,
    externalGit: new ExternalGitGuard(hosting.externalGit),
    git: {
      repository: async (projectId, which) => {
        const repo = 'id' in which ? await repositories.findById(projectId, which.id) : await repositories.find(projectId, which.slug)
        return repo === null ? null : { id: repo._id, gitDir: repo.gitDir, defaultBranch: repo.defaultBranch }
      },
      resolveCommit: async (gitDir, rev) => await reader.resolveCommit(gitDir, rev),
      cloneUrlPrefix: ports.cloneUrlPrefix,
      env: () => git.env()
    }
  })
  const appSources = sources
  const apps = new HostingApps(store, {
    ...deps,
    deployments,
    releases,
    timeline,
    appsDomain: hosting.appsDomain,
    degradedReason: driver.degradedReason,
    reconcile: async (appId) => { await ports.enqueueKeyed(RECONCILE_JOB, appId, { appId }) },
    cleanups: [
      async (record) => { await secrets.deleteForApp(record._id) },
      async (record) => { await logs.deleteForApp(record._id) },
      async (record) => { await timeline.deleteForApp(record._id) },
      async (record) => { await traffic.deleteForApp(record._id) },
      async (record) => { await appSources.deleteForApp(record) },
      async (record) => { await hostnames.deleteAllForApp(record.projectId, record._id) }
    ]
  })
  const gateway = new Gateway({
    routes,
    served: traffic,
    certificates,
    challenges: certificates,
    newId,
    connectionLimits: hosting.gateway.connections,
    // Read after server.ts raised it; a test app shares its process's limit.
    descriptorLimit: readDescriptorLimit()?.soft ?? null,
    clientTimeouts: ports.clientTimeouts,
    ...(ports.log === undefined ? {} : { log: ports.log })
  })
  await Promise.all([timeline.init(), secrets.init(), logs.init(), traffic.init(), releases.init(), deployments.init(), apps.init(), hostnames.init()])
  await certificates.init()
  return { apps, deployments, sources: appSources, releases, secrets, projectEnvironment, logs, timeline, traffic, routes, driver, gateway, hostnames, certificates }
}
