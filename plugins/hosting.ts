import fp from 'fastify-plugin'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { sealedAppSecrets } from '../services/hosting/secrets.js'
import { sealedDeploymentVariables } from '../services/hosting/project-variables.js'
import { systemClock } from '../services/platform/clock.js'
import { platformHosts } from '../services/config.js'
import { newId } from '../services/platform/ids.js'
import { sweepInterval } from '../options.js'
import { hostingSchemas } from '../schemas/hosting.js'
import { hostingErrors } from '../services/hosting/errors.js'
import type { AppKind, AppRecord } from '../services/hosting/records.js'
import { buildHostingServices, type HostingServices } from '../services/hosting/index.js'
import { LOGS_PRUNE_EVERY_MS, LOGS_PRUNE_JOB } from '../services/hosting/logs.js'
import type { Releases } from '../services/hosting/releases.js'
import { DEPLOY_JOB } from '../services/hosting/deployments.js'
import { RECONCILE_JOB } from '../services/hosting/apps.js'
import { USAGE_FLUSH_JOB } from '../services/hosting/traffic.js'
import { VERIFY_PENDING_EVERY_MS, VERIFY_PENDING_JOB } from '../services/hosting/hostnames.js'
import { RENEW_CERTIFICATES_EVERY_MS, RENEW_CERTIFICATES_JOB, sealedAcmeAccountKeys, sealedCertificateKeys } from '../services/hosting/certificates.js'
import { hostingHostnameSchemas } from '../schemas/hosting-hostnames.js'

export interface Hosting extends HostingServices {
  enabled: boolean
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

/**
 * App hosting: container apps and static apps, built and run by the
 * configured driver, deployed by jobs on the durable queue (one at a time per
 * app), served by Host through the gateway from the route table kept here.
 * With HOSTING_ENABLED off nothing is built or started and the routes answer
 * 404; a deleted project's apps are stopped and removed either way.
 */
async function hostingPlugin (app: FastifyInstance): Promise<void> {
  for (const sealed of [sealedCertificateKeys, sealedAcmeAccountKeys, sealedAppSecrets, sealedDeploymentVariables]) app.resealer.register(sealed)
  const { config } = app
  const { enabled } = config.hosting
  const onError = (error: unknown): void => { app.log.error({ err: error }, 'hosting') }
  const { headersSeconds, requestSeconds } = config.timeouts
  const hosting = await buildHostingServices({
    store: app.store,
    clock: systemClock,
    storeClock: app.storeClock,
    newId,
    secrets: app.secrets,
    hosting: config.hosting,
    tls: config.hostingTls,
    gatewayTarget: config.dns.gateway,
    reservedHosts: platformHosts(config),
    hiddenPaths: [...new Set([config.dataDir, config.hosting.dir, config.git.reposDir])],
    cloneUrlPrefix: `${config.publicUrl}/git/`,
    clientTimeouts: { headersMs: headersSeconds * 1000, requestMs: requestSeconds * 1000, checkEveryMs: sweepInterval(headersSeconds * 1000) },
    uploads: app.files.uploads,
    dns: app.dns,
    git: app.git,
    enqueueKeyed: async (type, appId, payload) => { await app.jobs.enqueueKeyed(type, appId, payload) },
    supervises: config.lead,
    log: app.log,
    onError
  })
  const { apps, deployments, sources, releases, logs, traffic, driver, gateway, hostnames, certificates } = hosting
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

  // The supervisor is one per deployment (WORKERS: the lead process): its jobs run there, where the instances and the
  // gateway's route table live. Another worker's API calls reach it through the Store: a route change is a reconcile job.
  const { lead } = config
  if (lead) {
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
  }
  if (enabled) {
    app.git.transport.onPushed(async (repo) => {
      await sources.afterPush(repo, await apps.autoDeploying(repo._id)).catch(onError)
    })
  }

  const metrics = app.metrics?.registry
  if (enabled && lead && metrics !== undefined) {
    driver.onEvent((event) => { metrics.hostingInstanceEvent(driver.name, event.type) })
    traffic.observe({
      served: (served) => { metrics.gatewayRequest(served.appId, served.status, served.durationMs / 1000) },
      removed: (appId) => { metrics.gatewayAppRemoved(appId) }
    })
    metrics.watchRunningInstances(async () => {
      const counts: Record<string, number> = { [driver.name]: 0 }
      for (const instance of await releases.running()) {
        const name = instance.running?.driver ?? driver.name
        counts[name] = (counts[name] ?? 0) + 1
      }
      return counts
    })
  }

  let gatewayPort: number | null = null
  app.decorate('hosting', { ...hosting, enabled, gatewayPort: () => gatewayPort } satisfies Hosting)

  if (enabled && lead) {
    // Instances a previous run left are re-adopted before anything is routed; the apps are then reconciled by their jobs.
    app.addHook('onReady', async () => {
      for (const appId of await releases.adopt()) {
        await releases.publish(appId)
        await app.jobs.enqueueKeyed(RECONCILE_JOB, appId, { appId })
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
    if (enabled && lead) await leaveOrStopApps(app, releases).catch((error: unknown) => { app.log.error({ err: error }, 'hosting: could not settle the apps\' instances on shutdown') })
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
  dependencies: ['plinth-config', 'plinth-store', 'plinth-secrets', 'plinth-reseal', 'plinth-jobs', 'plinth-metrics', 'plinth-projects', 'plinth-permissions', 'plinth-files', 'plinth-git', 'plinth-dns']
})
