import fp from 'fastify-plugin'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { sealedDnsCredentials } from '../services/dns/providers.js'
import { systemClock } from '../services/platform/clock.js'
import { platformHosts } from '../services/config.js'
import { newId } from '../services/platform/ids.js'
import { dnsErrors } from '../services/dns/errors.js'
import { buildDnsServices, type DnsServices } from '../services/dns/index.js'
import type { HostedZone } from '../services/dns/zones.js'
import { dnsSchemas } from '../schemas/dns.js'

declare module 'fastify' {
  interface FastifyInstance {
    dns: DnsServices
  }
}

declare module './permissions.js' {
  interface ParentKinds {
    /** The project's zone named by `zoneId`: in the path, or in the query or body of the records routes. */
    zone: HostedZone
    /** The project's zone a record's id (`params.recordId`) names. */
    recordZone: HostedZone
  }
}

function zoneIdIn (request: FastifyRequest): string {
  for (const part of [request.params, request.query, request.body]) {
    const zoneId = (part as { zoneId?: unknown } | undefined)?.zoneId
    if (typeof zoneId === 'string') return zoneId
  }
  throw new Error('a route under a zone names no zoneId')
}

/**
 * DNS: zones and records on the built-in server or an external provider.
 * Builds the family's services, offers its parents to routes, takes a deleted
 * project's zones with it, and runs the built-in server on DNS_PORT (UDP and
 * TCP) when that is set.
 */
async function dnsPlugin (app: FastifyInstance): Promise<void> {
  app.resealer.register(sealedDnsCredentials)
  const { config } = app
  const dns = await buildDnsServices({
    store: app.store,
    clock: systemClock,
    newId,
    secrets: app.secrets,
    config: config.dns,
    reservedHosts: platformHosts(config),
    ownershipKey: app.deriveSecretKey('dns:ownership'),
    onQueryError: (error) => { app.log.error({ err: error }, 'DNS query failed') },
    onQueryAnswered: app.metrics === null ? undefined : app.metrics.registry.dnsQuery.bind(app.metrics.registry)
  })
  for (const schema of dnsSchemas) app.addSchema(schema)
  app.registerParent('zone', {
    within: 'project',
    errors: [dnsErrors.zoneNotFound],
    load: async (request, { scope }) => ({ value: await dns.zones.find(scope.project.id, zoneIdIn(request)) })
  })
  app.registerParent('recordZone', {
    within: 'project',
    errors: [dnsErrors.recordNotFound],
    load: async (request, { scope }) => ({ value: await dns.zones.ofRecord(scope.project.id, (request.params as { recordId: string }).recordId) })
  })
  app.projects.onDelete(async (projectId) => {
    await dns.zones.deleteAllForProject(projectId)
    await dns.providers.deleteAllForProject(projectId)
  })
  app.decorate('dns', dns)

  const { port, host } = config.dns
  if (port !== null) {
    // Started once the app is ready, so a test or a server that never gets there holds no port.
    app.addHook('onReady', async () => {
      const bound = await dns.server.listen(port, host)
      app.log.info({ port: bound, host }, 'DNS server listening on UDP and TCP')
    })
    app.addHook('preClose', async () => { await dns.server.close() })
  }
}

export default fp(dnsPlugin, {
  name: 'plinth-dns',
  fastify: '5.x',
  dependencies: ['plinth-config', 'plinth-store', 'plinth-metrics', 'plinth-secrets', 'plinth-reseal', 'plinth-projects', 'plinth-permissions']
})
