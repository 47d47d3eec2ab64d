import t from 'tap'
import { randomBytes } from 'node:crypto'
import { createSecretBox } from '../../../services/platform/crypto.js'
import { tempStore } from '../../helper.js'
import { ManualClock } from '../../../services/platform/clock.js'
import { createIdGenerator } from '../../../services/platform/ids.js'
import { AppError } from '../../../services/platform/errors.js'
import { parseDnsConfig } from '../../../services/dns/config.js'
import { buildDnsServices } from '../../../services/dns/index.js'

async function services (t: Parameters<typeof tempStore>[0]) {
  const store = await tempStore(t)
  const clock = new ManualClock(Date.UTC(2026, 4, 17, 12))
  const newId = createIdGenerator(() => clock.nowMs())
  return await buildDnsServices({ store, clock, newId, secrets: createSecretBox(randomBytes(32)), config: parseDnsConfig({ DNS_NAMESERVERS: 'ns1.example.net' }), reservedHosts: [], ownershipKey: randomBytes(32), onQueryError: () => {} })
}

t.test('the serial starts at the date and rises with every change, past the date when it must', async (t) => {
  const { builtin, zones, records } = await services(t)
  const zone = await zones.create('p1', { name: 'example.com' })
  const serial = async () => (await builtin.zoneFor('example.com'))?.serial
  t.equal(await serial(), 2026051701, 'YYYYMMDDnn')
  for (let i = 0; i < 3; i++) await records.create(zone, { name: `h${i}`, type: 'A', content: '192.0.2.1' })
  t.equal(await serial(), 2026051704)
})

t.test('concurrent changes: each lands whole or is refused, and the serial counts those that landed', async (t) => {
  const { builtin, zones, records } = await services(t)
  const zone = await zones.create('p1', { name: 'example.com' })
  const before = (await builtin.zoneFor('example.com'))?.serial ?? 0
  const outcomes = await Promise.all(Array.from({ length: 8 }, async (_, i) => {
    try {
      await records.change(zone, { create: [{ name: `a${i}`, type: 'A', content: '192.0.2.1' }, { name: `a${i}`, type: 'TXT', content: `n=${i}` }] })
      return 'landed'
    } catch (error) {
      return error instanceof AppError ? error.code : String(error)
    }
  }))
  const landed = outcomes.filter((outcome) => outcome === 'landed').length
  t.ok(outcomes.every((outcome) => outcome === 'landed' || outcome === 'APP_DNS_CONCURRENT_CHANGE'), outcomes.join(', '))
  t.ok(landed >= 1)
  const served = await builtin.zoneFor('example.com')
  t.equal(served?.serial, before + landed)
  const names = new Set(served?.records.filter((record) => record.type !== 'NS').map((record) => record.name))
  t.equal(served?.records.filter((record) => record.type !== 'NS').length, landed * 2, 'no change half-applied')
  t.equal(names.size, landed)
})
