import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import { systemClock } from '../services/clock.js'
import { newId } from '../services/ids.js'
import { BuiltinProvider } from '../services/dns/providers/builtin.js'
import { DnsProviders } from '../services/dns/providers.js'
import { DnsRecords } from '../services/dns/records.js'
import { Zones } from '../services/dns/zones.js'
import { dnsSchemas } from '../schemas/dns.js'

export interface DnsServices {
  zones: Zones
  records: DnsRecords
  providers: DnsProviders
  builtin: BuiltinProvider
}

declare module 'fastify' {
  interface FastifyInstance {
    dns: DnsServices
  }
}

/**
 * DNS: zones and records on the built-in server or an external provider.
 * A deleted project's zones leave the built-in server with it.
 */
async function dnsPlugin (app: FastifyInstance): Promise<void> {
  const { config } = app
  const builtin = new BuiltinProvider(app.store, { clock: systemClock })
  const providers = new DnsProviders(builtin)
  const zones = new Zones(app.store, { clock: systemClock, newId, providers, nameservers: config.dns.nameservers })
  const records = new DnsRecords(zones)
  await builtin.init()
  await zones.init()
  for (const schema of dnsSchemas) app.addSchema(schema)
  app.projects.onDelete(async (projectId) => { await zones.deleteAllForProject(projectId) })
  app.decorate('dns', { zones, records, providers, builtin })
}

export default fp(dnsPlugin, { name: 'plinth-dns', fastify: '5.x', dependencies: ['plinth-config', 'plinth-store', 'plinth-secrets', 'plinth-projects'] })
