import t from 'tap'
import { AppError } from '../../../../services/platform/errors.js'
import { AddressGuard } from '../../../../services/outbound/internal-addresses.js'
import { CloudflareProvider } from '../../../../services/dns/providers/cloudflare.js'
import { providerContract } from '../provider-contract.js'
import { startCloudflareApi } from './cloudflare-api.js'

// The stand-in provider listens on loopback, which only an operator's allowance opens.
const loopbackGuard = new AddressGuard({ allowedHosts: ['127.0.0.1'] })

t.test('contract test of our Cloudflare client, against a local server speaking Cloudflare\'s v4 API', async (t) => {
  const api = await startCloudflareApi('cf-token')
  t.teardown(api.stop)
  const provider = new CloudflareProvider({ guard: loopbackGuard, endpoint: api.url, accountId: 'acc1', apiToken: 'cf-token' })
  await providerContract(t, { provider, listsSoa: false, bumpsSerial: false, zone: 'contract.example' })
  t.equal(api.zones.size, 0, 'the zone was deleted at Cloudflare')

  const refused = await new CloudflareProvider({ guard: loopbackGuard, endpoint: api.url, accountId: 'acc1', apiToken: 'wrong' }).check().catch((error: unknown) => error)
  t.ok(refused instanceof AppError && refused.status === 502)
  t.equal((refused as Error).message, 'Cloudflare refused the credentials (403): Invalid access token (9109)')
  const noAccount = await new CloudflareProvider({ guard: loopbackGuard, endpoint: api.url, accountId: null, apiToken: 'cf-token' }).createZone({ id: 'z', name: 'a.example', nameservers: [] }).catch((error: unknown) => error)
  t.match((noAccount as Error).message, /needs the provider's accountId/)
})
