import { notFound } from '../errors.js'
import type { BuiltinProvider } from './providers/builtin.js'
import type { DnsProvider } from './providers/types.js'
import { BUILTIN_PROVIDER_ID, type ProviderSource } from './zones.js'

/** A project's DNS providers: the built-in server, always there under the id `builtin`. */
export class DnsProviders implements ProviderSource {
  constructor (private readonly builtin: BuiltinProvider) {}

  async open (_projectId: string, providerId: string): Promise<{ provider: DnsProvider, accountKey: string }> {
    if (providerId === BUILTIN_PROVIDER_ID) return { provider: this.builtin, accountKey: BUILTIN_PROVIDER_ID }
    throw notFound('APP_DNS_PROVIDER_NOT_FOUND', 'DNS provider not found')
  }
}
