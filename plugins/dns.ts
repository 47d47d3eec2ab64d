import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import { systemClock } from '../services/clock.js'
import { platformHosts } from '../services/config.js'
import { newId } from '../services/ids.js'
import { BuiltinProvider } from '../services/dns/providers/builtin.js'
import { DnsProviders } from '../services/dns/providers.js'
import { DnsRecords } from '../services/dns/records.js'
import { Zones } from '../services/dns/zones.js'
import { DnsServer } from '../services/dns/server.js'
import { ResponseRateLimiter } from '../services/dns/rate-limit.js'
import { ZoneFiles } from '../services/dns/zone-files.js'
import { Gateway } from '../services/dns/gateway.js'
import { dnsSchemas } from '../schemas/dns.js'

export interface DnsServices {
  zones: Zones
  records: DnsRecords
  zoneFiles: ZoneFiles
  gateway: Gateway
  providers: DnsProviders
  builtin: BuiltinProvider
  /** The built-in authoritative server; listening only when DNS_PORT is set. */
  server: DnsServer
}

declare module 'fastify' {
  interface FastifyInstance {
    dns: DnsServices
  }
}

/**
 * DNS: zones and records on the built-in server or an external provider.
 * A deleted project's zones leave the built-in server with it. The built-in
 * server listens on DNS_PORT (UDP and TCP) when that is set.
 */
async function dnsPlugin (app: FastifyInstance): Promise<void> {
  const { config } = app
  const builtin = new BuiltinProvider(app.store, { clock: systemClock })
  const providers = new DnsProviders(app.store, { clock: systemClock, newId, secrets: app.secrets, builtin, privateHosts: app.config.dns.providerPrivateHosts })
  const zones = new Zones(app.store, { clock: systemClock, newId, providers, nameservers: config.dns.nameservers, reservedHosts: platformHosts(config) })
  const records = new DnsRecords(zones)
  await builtin.init()
  await providers.init()
  await zones.init()
  for (const schema of dnsSchemas) app.addSchema(schema)
  app.projects.onDelete(async (projectId) => {
    await zones.deleteAllForProject(projectId)
    await providers.deleteAllForProject(projectId)
  })
  const server = new DnsServer(builtin, {
    axfrAllow: config.dns.axfrAllow,
    onError: (error) => app.log.error({ err: error }, 'DNS query failed'),
    rateLimiter: new ResponseRateLimiter(config.dns.rateLimit, () => systemClock.nowMs())
  })
  const gateway = new Gateway({ zones, records, target: config.dns.gateway, ownershipKey: app.deriveSecretKey('dns:ownership') })
  app.decorate('dns', { zones, records, zoneFiles: new ZoneFiles(zones, records), gateway, providers, builtin, server })
  const { port, host } = config.dns
  if (port !== null) {
    // Started once the app is ready, so a test or a server that never gets there holds no port.
    app.addHook('onReady', async () => {
      const bound = await server.listen(port, host)
      app.log.info({ port: bound, host }, 'DNS server listening on UDP and TCP')
    })
    app.addHook('preClose', async () => { await server.close() })
  }
}

export default fp(dnsPlugin, { name: 'plinth-dns', fastify: '5.x', dependencies: ['plinth-config', 'plinth-store', 'plinth-secrets', 'plinth-projects'] })
