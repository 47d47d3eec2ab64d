import t from 'tap'
import { tempStore } from '../../helper.js'
import { ManualClock } from '../../../services/platform/clock.js'
import { ConnectionLeases, REALTIME_LEASES } from '../../../services/realtime/leases.js'
import { RealtimeLog } from '../../../services/realtime/log.js'
import { RealtimeHub } from '../../../services/realtime/hub.js'
import type { RealtimeConfig } from '../../../services/realtime/config.js'
import type { DataCaller } from '../../../services/collections/access.js'

const LEASE_MS = 30_000

/** Two processes' lease books on one store, on one clock (the Store's time). */
t.test('slots are shared by processes, lapse unless renewed, and are given back only by their holder', async (t) => {
  const store = await tempStore(t)
  const clock = new ManualClock()
  const one = new ConnectionLeases(store, { clock, leaseMs: LEASE_MS })
  const two = new ConnectionLeases(store, { clock, leaseMs: LEASE_MS })
  await one.init()
  await two.init()
  const a = await one.acquire('user:ann', 2)
  const b = await two.acquire('user:ann', 2)
  t.ok(a !== null && b !== null, 'two slots, one taken on each process')
  t.equal(await one.acquire('user:ann', 2), null, 'a third is refused on either')
  t.equal(await two.acquire('user:ann', 2), null)
  t.ok(await one.acquire('user:bob', 2), 'another caller has slots of his own')

  clock.advance(LEASE_MS / 2)
  await one.renew()
  clock.advance(LEASE_MS / 2)
  // Process two stopped renewing (it died): its lease lapsed, process one's did not.
  const taken = await one.acquire('user:ann', 2)
  t.ok(taken !== null, 'the lapsed slot is taken over')
  t.equal(await two.acquire('user:ann', 2), null, 'the renewed one still counts')
  t.equal(taken?.id, b?.id, 'it is the lapsed process\'s slot')

  await two.release(b!)
  t.equal(await one.acquire('user:ann', 2), null, 'the old holder giving it back does not free the slot taken over')
  await one.release(a!)
  t.ok(await two.acquire('user:ann', 2), 'its holder giving it back does')

  clock.advance(LEASE_MS)
  await two.renew()
  const rows = store.collection(REALTIME_LEASES)
  t.equal(await rows.countDocuments({}), 3)
  t.same(await one.prune(), { pruned: 2 }, 'the prune deletes the lapsed leases only')
  t.same((await rows.find({}).toArray()).map((row) => row.processId), [two.processId])
})

t.test('the hub renews its leases each heartbeat and retries a give-back that failed', async (t) => {
  const store = await tempStore(t)
  const clock = new ManualClock()
  const config: RealtimeConfig = { retainedEvents: 100, pollMs: 250, heartbeatMs: 10_000, recheckMs: 3_600_000, maxSubscriptionsPerConnection: 5, maxConnectionsPerUser: 1 }
  const log = new RealtimeLog(store, { clock, retained: config.retainedEvents })
  await log.init()
  const leases = new ConnectionLeases(store, { clock, leaseMs: 3 * config.heartbeatMs })
  await leases.init()
  const hub = new RealtimeHub({ log, clock, config, leases, findCollection: async () => null, arm: async () => {} })
  const caller: DataCaller = { kind: 'user', id: 'ann' }
  const connect = async () => await hub.connect({ projectId: 'p1', caller, callerKey: 'user:ann', subscriptions: [], lastEventId: undefined, expiresAtMs: null, recheck: async () => caller })
  const held = await connect()
  const other = new ConnectionLeases(store, { clock, leaseMs: 3 * config.heartbeatMs })
  for (let beat = 0; beat < 5; beat++) {
    clock.advance(config.heartbeatMs)
    await hub.tick()
  }
  t.equal(await other.acquire('user:ann', 1), null, 'five beats on, past the lease\'s three, the open stream still holds its slot')

  const release = leases.release.bind(leases)
  let failing = true
  leases.release = async (hold) => { if (failing) throw new Error('store away'); await release(hold) }
  hub.forget(held)
  await hub.settled()
  await hub.tick()
  t.equal(await other.acquire('user:ann', 1), null, 'the give-back failed: the slot is still held')
  failing = false
  await hub.tick()
  t.ok(await other.acquire('user:ann', 1), 'the next tick gave it back')
})
