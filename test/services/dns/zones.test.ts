import t from 'tap'
import { randomBytes } from 'node:crypto'
import { createSecretBox } from '../../../services/platform/crypto.js'
import { tempStore } from '../../helper.js'
import { ManualClock } from '../../../services/platform/clock.js'
import { createIdGenerator } from '../../../services/platform/ids.js'
import { parseDnsConfig } from '../../../services/dns/config.js'
import { buildDnsServices } from '../../../services/dns/index.js'
import type { Document, Store, StoreCollection } from '../../../services/store/types.js'

/**
 * The zones service on a store whose zone records are written only once
 * `size` writers have come to write: every create has made whatever checks it
 * makes before writing, so checks that come before the write all pass.
 */
async function racingZones (t: Parameters<typeof tempStore>[0], size: number) {
  const store = await tempStore(t)
  let waiting = 0
  let release = (): void => {}
  const reached = new Promise<void>((resolve) => { release = resolve })
  const meeting: Store = Object.create(store)
  meeting.collection = <T extends Document>(name: string): StoreCollection<T> => {
    const inner = store.collection<T>(name)
    if (name !== 'dns_zones') return inner
    const wrapped: StoreCollection<T> = Object.create(inner)
    wrapped.insertOne = async (document) => {
      if (++waiting === size) release()
      await reached
      return await inner.insertOne(document)
    }
    return wrapped
  }
  const clock = new ManualClock(Date.UTC(2026, 4, 17, 12))
  const newId = createIdGenerator(() => clock.nowMs())
  const { zones } = await buildDnsServices({ store: meeting, clock, newId, secrets: createSecretBox(randomBytes(32)), config: parseDnsConfig({ DNS_NAMESERVERS: 'ns1.example.net' }), reservedHosts: [], ownershipKey: randomBytes(32), onQueryError: () => {} })
  return { zones, served: store.collection<{ zoneId: string }>('dns_served_zones') }
}

const races: Array<[string, string, string]> = [
  ['a zone and one inside it', 'example.com', 'shop.example.com'],
  ['a zone and one around it', 'deep.shop.example.com', 'example.com'],
  ['the same name', 'example.com', 'example.com']
]

for (const [what, first, second] of races) {
  t.test(`two projects racing for overlapping built-in zones never both get them: ${what}`, async (t) => {
    const { zones, served } = await racingZones(t, 2)
    const outcomes = await Promise.allSettled([zones.create('p1', { name: first }), zones.create('p2', { name: second })])
    const won = outcomes.filter((outcome) => outcome.status === 'fulfilled')
    t.ok(won.length <= 1, `${won.length} of the two won`)
    for (const outcome of outcomes) {
      if (outcome.status === 'rejected') t.match(outcome.reason, { status: 409, code: /^APP_DNS_ZONE_(OVERLAP|EXISTS)$/ })
    }
    const held = [...await zones.list('p1'), ...await zones.list('p2')]
    t.equal(held.length, won.length, 'a refused create leaves no zone record behind')
    t.same((await served.find({}).toArray()).map((zone) => zone.zoneId), held.map((zone) => zone.id), 'nor a zone on the built-in server')

    // Once the race is over a retry decides: the first free one wins and the other is refused.
    for (const [projectId, name] of [['p1', first], ['p2', second]]) await zones.create(projectId, { name }).catch(() => null)
    t.equal([...await zones.list('p1'), ...await zones.list('p2')].length, 1, 'after the retries exactly one project holds a zone')
  })
}

t.test('one project may race itself for a zone and one inside it: both are its own', async (t) => {
  const { zones } = await racingZones(t, 2)
  const outcomes = await Promise.allSettled([zones.create('p1', { name: 'example.com' }), zones.create('p1', { name: 'shop.example.com' })])
  t.same(outcomes.map((outcome) => outcome.status), ['fulfilled', 'fulfilled'])
})
