import t from 'tap'
import { ManualClock } from '../../../../services/platform/clock.js'
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

t.test('a zone is kept under its name, and a later zone of the same name is never taken for an earlier one', async (t) => {
  const builtin = new BuiltinProvider(await tempStore(t), { clock: new ManualClock() })
  await builtin.init()
  await builtin.createZone({ id: 'z1', name: 'same.example', nameservers: ['ns1.plinth.localhost'] })
  t.equal((await builtin.zoneFor('www.deep.same.example'))?.zoneId, 'z1', 'found from a name several labels below it')
  t.equal(await builtin.zoneFor('other.example'), null)
  const stale = { id: 'z0', name: 'same.example', externalId: null }
  t.same(await builtin.readZone(stale), { records: [], version: null }, 'another zone id reads nothing')
  await t.rejects(builtin.replaceRRsets(stale, [], null), 'nor writes')
  await builtin.deleteZone(stale)
  t.equal((await builtin.zoneFor('same.example'))?.zoneId, 'z1', 'nor deletes')
  await builtin.createZone({ id: 'z2', name: 'sub.same.example', nameservers: ['ns1.plinth.localhost'] })
  t.equal((await builtin.zoneFor('a.sub.same.example'))?.zoneId, 'z2', 'the longest zone name wins')
  await builtin.deleteZone({ id: 'z1', name: 'same.example', externalId: null })
  t.equal(await builtin.zoneFor('same.example'), null)
})
