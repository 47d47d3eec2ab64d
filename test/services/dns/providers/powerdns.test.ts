import t from 'tap'
import { AppError } from '../../../../services/platform/errors.js'
import { AddressGuard } from '../../../../services/outbound/internal-addresses.js'
import { PowerDnsProvider } from '../../../../services/dns/providers/powerdns.js'
import { tempDir } from '../../../helper.js'
import { providerContract } from '../provider-contract.js'
import { startPowerDns } from './pdns-server.js'

// The stand-in provider listens on loopback, which only an operator's allowance opens.
const loopbackGuard = new AddressGuard({ allowedHosts: ['127.0.0.1'] })

t.test('provider contract: a real PowerDNS on loopback, answers checked with dig', async (t) => {
  const pdns = await startPowerDns(tempDir(t, 'plinth-pdns-'))
  t.teardown(pdns.stop)
  const provider = new PowerDnsProvider({ guard: loopbackGuard, endpoint: pdns.apiUrl, serverId: 'localhost', apiKey: pdns.apiKey })
  await providerContract(t, { provider, dnsPort: pdns.dnsPort, listsSoa: true, bumpsSerial: true, zone: 'contract.example' })

  const wrongKey = new PowerDnsProvider({ guard: loopbackGuard, endpoint: pdns.apiUrl, serverId: 'localhost', apiKey: 'wrong' })
  const refused = await wrongKey.check().catch((error: unknown) => error)
  t.ok(refused instanceof AppError && refused.status === 502, 'a wrong key fails the check')
  t.match((refused as Error).message, /^PowerDNS refused the credentials \(401\)/)
  await pdns.stop()
  const down = await provider.check().catch((error: unknown) => error)
  t.match((down as Error).message, /^Could not reach PowerDNS at 127\.0\.0\.1:\d+: ECONNREFUSED/, 'a stopped server is named as unreachable')
})
