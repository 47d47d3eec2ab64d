import t from 'tap'
import { ManualClock } from '../../../../services/clock.js'
import { BuiltinProvider } from '../../../../services/dns/providers/builtin.js'
import { DnsServer } from '../../../../services/dns/server.js'
import { tempStore } from '../../../helper.js'
import { providerContract } from '../provider-contract.js'

t.test('provider contract: the built-in server, answers checked with dig', async (t) => {
  const builtin = new BuiltinProvider(await tempStore(t), { clock: new ManualClock() })
  await builtin.init()
  const server = new DnsServer(builtin, { axfrAllow: [] })
  const port = await server.listen(0, '127.0.0.1')
  t.teardown(() => server.close())
  await providerContract(t, { provider: builtin, dnsPort: port, listsSoa: true, bumpsSerial: true, zone: 'contract.example' })
})
