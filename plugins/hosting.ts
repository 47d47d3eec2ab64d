import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import fp from 'fastify-plugin'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { systemClock } from '../services/platform/clock.js'
import { platformHosts } from '../services/config.js'
import { newId } from '../services/platform/ids.js'
import { readDescriptorLimit } from '../services/platform/descriptors.js'
import { sweepInterval } from '../options.js'
import { hostingSchemas } from '../schemas/hosting.js'
import { HostRoutes } from '../services/hosting/route-table.js'
import { hostingErrors } from '../services/hosting/errors.js'
import type { AppKind, AppRecord } from '../services/hosting/records.js'
import { Timeline } from '../services/hosting/timeline.js'
import { AppSecrets } from '../services/hosting/secrets.js'
import { ProjectEnvironment } from '../services/hosting/project-variables.js'
import { AppLogs, LOGS_PRUNE_EVERY_MS, LOGS_PRUNE_JOB } from '../services/hosting/logs.js'
import { Releases } from '../services/hosting/releases.js'
import { DEPLOY_JOB, Deployments } from '../services/hosting/deployments.js'
import { HostingApps, RECONCILE_JOB } from '../services/hosting/apps.js'
import { AppSources } from '../services/hosting/app-sources.js'
import { ExternalGitGuard } from '../services/hosting/external-git.js'
import { Traffic, USAGE_FLUSH_JOB } from '../services/hosting/traffic.js'
import type { RuntimeDriver } from '../services/hosting/runtime.js'
import { ProcessDriver, probeSandbox } from '../services/hosting/process-driver/index.js'
import { ContainerDriver } from '../services/hosting/container-driver/index.js'
import { Gateway } from '../services/hosting/gateway/gateway.js'
import { Hostnames, VERIFY_PENDING_EVERY_MS, VERIFY_PENDING_JOB, type HostingEventListener } from '../services/hosting/hostnames.js'
import { Certificates, RENEW_CERTIFICATES_EVERY_MS, RENEW_CERTIFICATES_JOB } from '../services/hosting/certificates.js'
import { hostingHostnameSchemas } from '../schemas/hosting-hostnames.js'

export interface Hosting {
  enabled: boolean
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
  /** The port the gateway listens on once the app is ready; null when the gateway is off (GATEWAY_PORT=off, or a test app). */
  gatewayPort: () => number | null
}

declare module 'fastify' {
  interface FastifyInstance {
    hosting: Hosting
  }
}

declare module './permissions.js' {
  interface ParentKinds {
    /** The project's container app `params.appId`. */
    app: AppRecord
    /** The project's static app `params.appId`. */
    staticApp: AppRecord
  }
}

/** The parent kind of an app of `kind`, for the routes container and static apps share. */
export const appParent = (kind: AppKind) => kind === 'static' ? 'staticApp' as const : 'app' as const

const USAGE_FLUSH_EVERY_MS = 60_000

function createDriver (app: FastifyInstance): RuntimeDriver {
  const { hosting, dataDir, git } = app.config
  if (hosting.driver === 'container' && hosting.container !== null) {
    return new ContainerDriver({ ...hosting.container, artifactsDir: join(hosting.dir, 'artifacts'), clock: systemClock, newId, allowedRanges: hosting.appAllowedRanges })
  }
  // The platform's folders, wherever they are configured, are hidden even where one lies inside what sandboxes see.
  const hiddenPaths = [...new Set([dataDir, hosting.dir, git.reposDir])]
  return new ProcessDriver({ root: join(hosting.dir, 'driver'), clock: systemClock, sandbox: probeSandbox({ network: { allowed: hosting.appAllowedRanges } }), newId, hiddenPaths })
}

/**
 * App hosting: container apps and static apps, built and run by the
 * configured driver, deployed by jobs on the durable queue (one at a time per
 * app), served by Host through the gateway from the route table kept here.
 * With HOSTING_ENABLED off nothing is built or started and the routes answer
 * 404; a deleted project's apps are stopped and removed either way.
 */
async function hostingPlugin (app: FastifyInstance): Promise<void> {
  const { config } = app
  const { enabled } = config.hosting
  const workDir = join(config.hosting.dir, 'sources')
  if (enabled) mkdirSync(workDir, { recursive: true })
  const driver = createDriver(app)
  const deps = { clock: systemClock, newId }
  const onError = (error: unknown): void => { app.log.error({ err: error }, 'hosting') }
  const routes = new HostRoutes()
  const timeline = new Timeline(app.store, deps)
  const secrets = new AppSecrets(app.store, { clock: systemClock, box: app.secrets })
  const projectEnvironment = new ProjectEnvironment(app.store, { box: app.secrets, timeline })
  // Sequence numbers on the Store's time, so lines from instances on different nodes sort as they were written.
  const logs = new AppLogs(app.store, { ...deps, clock: app.storeClock, onError, limits: config.hosting.logs })
  const traffic = new Traffic(app.store, { clock: systemClock, projectOf: (appId) => routes.routeOf(appId)?.projectId ?? null })
  const wake = async (type: string, appId: string): Promise<void> => { await app.jobs.enqueueKeyed(type, appId, { appId }) }
  const appsDomain = config.hosting.appsDomain
  const onEvent: HostingEventListener = async (kind, details) => {
    await timeline.add({ _id: details.appId, projectId: details.projectId }, kind, `${kind.replace('.', ' ').replace('_', ' ')}: ${details.hostname}`).catch(onError)
  }
  const hostnames = new Hostnames(app.store, {
    ...deps,
    gateway: app.dns.gateway,
    target: config.dns.gateway,
    resolvers: config.hostingTls.dnsResolvers,
    reservedHosts: platformHosts(config),
    onEvent
  })
  const certificates = new Certificates(app.store, {
    clock: systemClock,
    secrets: app.secrets,
    hostnames,
    dns: { zones: app.dns.zones, records: app.dns.records },
    acme: { directoryUrl: config.hostingTls.acmeDirectoryUrl, email: config.hostingTls.acmeEmail, caCertificates: config.hostingTls.acmeCaCertificates },
    onEvent,
    onError
  })
  const releases = new Releases(app.store, {
    ...deps,
    driver,
    routes,
    logs,
    secrets,
    timeline,
    projectEnvironment,
    hostsOf: async (record) => [`${record.name}.${appsDomain}`, ...(await hostnames.list(record.projectId, record._id)).filter((one) => one.status === 'verified').map((one) => one.hostname)],
    limits: config.hosting.instanceLimits,
    healthTimeoutMs: config.hosting.healthTimeoutMs,
    stopGraceMs: config.hosting.stopGraceMs,
    onError
  })
  // The git family's one reader and git runner: hosting shares its pack cache rather than keeping a second.
  const { reader, git } = app.git
  let sources: AppSources | null = null
  const deployments = new Deployments(app.store, {
    ...deps,
    driver,
    releases,
    logs,
    secrets,
    timeline,
    projectEnvironment,
    workDir,
    prepareSource: async (record, deployment, dir) => await (sources as AppSources).prepare(record, deployment, dir),
    wake: async (appId) => { await wake(DEPLOY_JOB, appId) },
    addBuildSeconds: (record, seconds) => { traffic.addBuildSeconds(record, seconds) },
    buildTimeoutMs: config.hosting.buildTimeoutMs,
    buildsPerProject: config.hosting.buildsPerProject
  })
  sources = new AppSources({
    uploads: app.files.uploads,
    deployments,
    externalGit: new ExternalGitGuard(config.hosting.externalGit),
    git: {
      repository: async (projectId, which) => {
        const repo = 'id' in which ? await app.git.repositories.findById(projectId, which.id) : await app.git.repositories.find(projectId, which.slug)
        return repo === null ? null : { id: repo._id, gitDir: repo.gitDir, defaultBranch: repo.defaultBranch }
      },
      resolveCommit: async (gitDir, rev) => await reader.resolveCommit(gitDir, rev),
      cloneUrlPrefix: `${config.publicUrl}/git/`,
      env: () => git.env()
    }
  })
  const apps = new HostingApps(app.store, {
    ...deps,
    deployments,
    releases,
    timeline,
    appsDomain,
    degradedReason: driver.degradedReason,
    reconcile: async (appId) => { await wake(RECONCILE_JOB, appId) },
    cleanups: [
      async (record) => { await secrets.deleteForApp(record._id) },
      async (record) => { await logs.deleteForApp(record._id) },
      async (record) => { await timeline.deleteForApp(record._id) },
      async (record) => { await traffic.deleteForApp(record._id) },
      async (record) => { await (sources as AppSources).deleteForApp(record) },
      async (record) => { await hostnames.deleteAllForApp(record.projectId, record._id) }
    ]
  })
  await Promise.all([timeline.init(), secrets.init(), logs.init(), traffic.init(), releases.init(), deployments.init(), apps.init(), hostnames.init()])
  await certificates.init()
  for (const schema of [...hostingSchemas, ...hostingHostnameSchemas]) app.addSchema(schema)
  for (const kind of ['container', 'static'] as const) {
    app.registerParent(appParent(kind), {
      within: 'project',
      errors: [hostingErrors.appNotFound],
      load: async (request: FastifyRequest, { scope }) => ({ value: await apps.get(scope.project.id, (request.params as { appId: string }).appId, kind) })
    })
  }
  app.projects.onDelete(async (projectId) => {
    await apps.deleteAllForProject(projectId)
    await driver.discardBuildCache(projectId).catch(onError)
  })

  // Deployments build, for up to HOSTING_BUILD_TIMEOUT_SECONDS: the long lane, so every other job keeps its own slots.
  app.registerJobHandler(DEPLOY_JOB, async (payload) => await deployments.runNext(String(payload.appId)), { lane: 'long' })
  app.registerJobHandler(LOGS_PRUNE_JOB, async () => await logs.prune())
  app.registerJobHandler(RECONCILE_JOB, async (payload) => { await releases.reconcile(String(payload.appId)) })
  app.registerJobHandler(USAGE_FLUSH_JOB, async () => await traffic.flush(await releases.running()))
  app.registerJobHandler(RENEW_CERTIFICATES_JOB, async () => await certificates.renewDue())
  // A pending name whose records appeared is verified here; the app it now reaches is routed at once.
  app.registerJobHandler(VERIFY_PENDING_JOB, async () => {
    const outcome = await hostnames.verifyPending()
    for (const name of outcome.verified) {
      const holder = await hostnames.holder(name)
      if (holder !== null) await releases.publish(holder.appId)
    }
    return outcome
  })
  if (enabled) {
    app.git.transport.onPushed(async (repo) => {
      await sources?.afterPush(repo, await apps.autoDeploying(repo._id)).catch(onError)
    })
  }

  const { headersSeconds, requestSeconds } = config.timeouts
  const gateway = new Gateway({
    routes,
    served: traffic,
    certificates,
    challenges: certificates,
    newId,
    connectionLimits: config.hosting.gateway.connections,
    // Read after server.ts raised it; a test app shares its process's limit.
    descriptorLimit: readDescriptorLimit()?.soft ?? null,
    clientTimeouts: { headersMs: headersSeconds * 1000, requestMs: requestSeconds * 1000, checkEveryMs: sweepInterval(headersSeconds * 1000) },
    log: app.log
  })
  let gatewayPort: number | null = null
  app.decorate('hosting', { enabled, apps, deployments, sources, releases, secrets, projectEnvironment, logs, timeline, traffic, routes, driver, gateway, hostnames, certificates, gatewayPort: () => gatewayPort } satisfies Hosting)

  if (enabled) {
    // Instances a previous run left are re-adopted before anything is routed; the apps are then reconciled by their jobs.
    app.addHook('onReady', async () => {
      for (const appId of await releases.adopt()) {
        await releases.publish(appId)
        await wake(RECONCILE_JOB, appId)
      }
      await app.jobs.schedule(USAGE_FLUSH_JOB, USAGE_FLUSH_EVERY_MS)
      await app.jobs.schedule(RENEW_CERTIFICATES_JOB, RENEW_CERTIFICATES_EVERY_MS)
      await app.jobs.schedule(VERIFY_PENDING_JOB, VERIFY_PENDING_EVERY_MS)
      await app.jobs.schedule(LOGS_PRUNE_JOB, LOGS_PRUNE_EVERY_MS)
      const { port, tlsPort, host } = config.hosting.gateway
      if (port !== null) {
        await gateway.listen({ port, host, ...(tlsPort === null ? {} : { tlsPort }) })
        gatewayPort = gateway.addresses().http?.port ?? null
        app.log.info({ port: gatewayPort, host, ...gateway.connectionLimits }, 'hosting gateway listening')
      }
      if (driver.degradedReason !== null) app.log.warn({ reason: driver.degradedReason }, 'hosting runs with less isolation than it should')
    })
  }
  app.addHook('preClose', async () => {
    await gateway.close()
    // After the job worker stopped (an earlier preClose), so no release is starting instances meanwhile.
    if (enabled) await leaveOrStopApps(app, releases).catch((error: unknown) => { app.log.error({ err: error }, 'hosting: could not settle the apps\' instances on shutdown') })
  })
  app.addHook('onClose', async () => { await driver.close() })
}

/**
 * Instances outlive the server by design: the next start adopts them, so a
 * restart costs the apps nothing. With HOSTING_STOP_APPS_ON_EXIT they are
 * stopped instead, and recorded so; the next start, finding none to adopt,
 * starts every live deployment again. Either way the log says which.
 */
async function leaveOrStopApps (app: FastifyInstance, releases: Releases): Promise<void> {
  const instances = await releases.running()
  if (!app.config.hosting.stopAppsOnExit) {
    app.log.info({ instances: instances.length }, 'hosted apps keep running after the server stops, by design: the next start adopts them (HOSTING_STOP_APPS_ON_EXIT=true stops them on shutdown)')
    return
  }
  await Promise.all(instances.map(async (instance) => { await releases.stop(instance, 'the server shut down (HOSTING_STOP_APPS_ON_EXIT)') }))
  app.log.info({ instances: instances.length }, 'hosted app instances stopped (HOSTING_STOP_APPS_ON_EXIT): the next start starts the live deployments again')
}

export default fp(hostingPlugin, {
  name: 'plinth-hosting',
  fastify: '5.x',
  dependencies: ['plinth-config', 'plinth-store', 'plinth-secrets', 'plinth-jobs', 'plinth-projects', 'plinth-permissions', 'plinth-files', 'plinth-git', 'plinth-dns']
})
