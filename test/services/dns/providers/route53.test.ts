import t from 'tap'
import { AppError } from '../../../../services/platform/errors.js'
import { AddressGuard } from '../../../../services/outbound/internal-addresses.js'
import { Route53Provider } from '../../../../services/dns/providers/route53.js'
import { providerContract } from '../provider-contract.js'
import { startRoute53Api } from './route53-api.js'

// The stand-in provider listens on loopback, which only an operator's allowance opens.
const loopbackGuard = new AddressGuard({ allowedHosts: ['127.0.0.1'] })

const credentials = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' }

t.test('contract test of our Route 53 client, against a local server speaking Route 53\'s API and checking each signature', async (t) => {
  const api = await startRoute53Api(credentials)
  t.teardown(api.stop)
  const provider = new Route53Provider({ guard: loopbackGuard, endpoint: api.url, ...credentials })
  await providerContract(t, { provider, listsSoa: true, bumpsSerial: false, zone: 'contract.example' })
  t.equal(api.zones.size, 0, 'emptied, then deleted at Route 53')

  const refused = await new Route53Provider({ guard: loopbackGuard, endpoint: api.url, accessKeyId: credentials.accessKeyId, secretAccessKey: 'wrong' }).check().catch((error: unknown) => error)
  t.ok(refused instanceof AppError && refused.status === 502)
  t.match((refused as Error).message, /^Route 53 refused the credentials \(403\): The request signature we calculated does not match .* \(SignatureDoesNotMatch\)$/)
})
