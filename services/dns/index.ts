import type { Clock } from '../platform/clock.js'
import type { SecretBox } from '../platform/crypto.js'
import type { IdGenerator } from '../platform/ids.js'
import type { Store } from '../store/types.js'
import type { DnsConfig } from './config.js'
import { Gateway } from './gateway.js'
import { AddressGuard } from '../outbound/internal-addresses.js'
import { DnsProviders } from './providers.js'
import { BuiltinProvider } from './providers/builtin.js'
import { DnsRecords } from './records.js'
import { ResponseRateLimiter } from './rate-limit.js'
import { DnsServer } from './server.js'
import { ZoneFiles } from './zone-files.js'
import { Zones } from './zones.js'

/** What the DNS family is built from. */
export interface DnsPorts {
  store: Store
  clock: Clock
  newId: IdGenerator
  secrets: SecretBox
  config: DnsConfig
  /** The deployment's own names, which no built-in zone may take (`platformHosts` in services/config.ts). */
  reservedHosts: string[]
  /** The key the gateway's ownership TXT values are derived from. */
  ownershipKey: Buffer
  /** Told of queries the built-in server failed to answer (it answers them SERVFAIL). */
  onQueryError: (error: unknown) => void
  /** Told of each query the built-in server answers: its question's type and the answer's rcode (metrics). */
  onQueryAnswered?: (qtype: string, rcode: number) => void
}

export interface DnsServices {
  zones: Zones
  records: DnsRecords
  zoneFiles: ZoneFiles
  gateway: Gateway
  providers: DnsProviders
  builtin: BuiltinProvider
  /** The built-in authoritative server; listening only once started (DNS_PORT). */
  server: DnsServer
}

/** The DNS family's services, their indexes made. */
export async function buildDnsServices (ports: DnsPorts): Promise<DnsServices> {
  const { store, clock, newId, config } = ports
  const builtin = new BuiltinProvider(store, { clock })
  // Zones are built on the providers, and a provider is deleted only once no zone is on it: that count is asked late.
  const zonesOn = async (projectId: string, providerId: string): Promise<number> => await zones.countOnProvider(projectId, providerId)
  const providers = new DnsProviders(store, {
    clock,
    newId,
    secrets: ports.secrets,
    builtin, // Every provider call goes through the one address guard, opened only where the operator said.
    guard: new AddressGuard({ allowedHosts: config.providerPrivateHosts }),
    zonesOn
  })
  const zones: Zones = new Zones(store, { clock, newId, providers, nameservers: config.nameservers, reservedHosts: ports.reservedHosts })
  const records = new DnsRecords(zones)
  await builtin.init()
  await providers.init()
  await zones.init()
  return {
    zones,
    records,
    zoneFiles: new ZoneFiles(zones, records),
    gateway: new Gateway({ zones, records, target: config.gateway, ownershipKey: ports.ownershipKey }),
    providers,
    builtin,
    server: new DnsServer(builtin, {
      axfrAllow: config.axfrAllow,
      onError: ports.onQueryError,
      onAnswer: ports.onQueryAnswered,
      rateLimiter: new ResponseRateLimiter(config.rateLimit, () => clock.nowMs())
    })
  }
}
