import t from 'tap'
import { tempStore } from '../../helper.js'
import { ManualClock } from '../../../services/platform/clock.js'
import { RealtimeLog } from '../../../services/realtime/log.js'
import { RealtimeHub, type StreamEvent } from '../../../services/realtime/hub.js'
import { ConnectionLeases } from '../../../services/realtime/leases.js'
import type { DataCaller } from '../../../services/collections/access.js'
import type { Store } from '../../../services/store/types.js'
import type { RealtimeConfig } from '../../../services/realtime/config.js'

const config: RealtimeConfig = {
  retainedEvents: 100, pollMs: 250, heartbeatMs: 15_000, recheckMs: 3_600_000, maxSubscriptionsPerConnection: 5, maxConnectionsPerUser: 1
}

async function leasesOn (store: Store, clock: ManualClock): Promise<ConnectionLeases> {
  const leases = new ConnectionLeases(store, { clock, leaseMs: 45_000 })
  await leases.init()
  return leases
}

/**
 * A revoke may land at any step of a connect. The hub is driven with real
 * parts (a log on a temp store) and the revoke is made from inside the step,
 * so each ordering is hit every run, not by timing.
 */
t.test('a revoke between the auth check and the head read refuses the stream', async (t) => {
  const store = await tempStore(t)
  const clock = new ManualClock()
  const log = new RealtimeLog(store, { clock, retained: config.retainedEvents })
  await log.init()
  const revoked = new Set<string>()
  let during: (() => Promise<void>) | null = null
  const hub = new RealtimeHub({
    log,
    clock,
    config,
    leases: await leasesOn(store, clock),
    findCollection: async () => null,
    arm: async () => { if (during !== null) await during() }
  })
  // What the project's sessionsEnded does: this process's streams, then an entry for the others.
  const revoke = async (userId: string): Promise<void> => {
    revoked.add(userId)
    await hub.revokeUsers('p1', [userId])
    await log.append('p1', [{ key: `revoke:${userId}`, type: 'revoke', collection: '_users', record: { _id: userId, userIds: [userId] }, at: new Date(0) }])
  }
  const connect = async (userId: string) => {
    const caller: DataCaller = { kind: 'user', id: userId }
    return await hub.connect({
      projectId: 'p1',
      caller,
      callerKey: `user:${userId}`,
      subscriptions: [],
      lastEventId: undefined,
      expiresAtMs: null,
      recheck: async () => {
        if (revoked.has(userId)) throw new Error('session ended')
        return caller
      }
    })
  }

  during = async () => { await revoke('ann') }
  await t.rejects(connect('ann'), { message: 'session ended' }, 'revoked after the route checked her token, before the head was read: refused')
  t.equal(hub.size, 0, 'no stream is kept')
  during = null
  revoked.delete('ann')
  const again = await connect('ann')
  t.equal(hub.size, 1, 'her connection did not count against her limit of one')

  // A revoke right after the head was read is past it: the stream reads it and ends.
  const sent: StreamEvent[] = []
  const sink = { send: (event: StreamEvent) => { sent.push(event) }, end: (event: StreamEvent) => { sent.push(event) } }
  await again.start(sink)
  await revoke('ann')
  await hub.pump('p1')
  t.same(sent.map((event) => event.event), ['ready', 'end'])
  t.match(sent[1].data, { reason: 'revoked' })
  t.equal(hub.size, 0)

  const bob = await connect('bob')
  t.equal(bob.closed, false, 'an unrevoked user streams')
})

t.test('connects of one caller that overlap cannot pass the per-user limit together; a failed one gives its place back', async (t) => {
  const store = await tempStore(t)
  const clock = new ManualClock()
  const log = new RealtimeLog(store, { clock, retained: config.retainedEvents })
  await log.init()
  let failRecheck = false
  const hub = new RealtimeHub({ log, clock, config, leases: await leasesOn(store, clock), findCollection: async () => null, arm: async () => {} })
  const connect = async () => {
    const caller: DataCaller = { kind: 'user', id: 'ann' }
    return await hub.connect({
      projectId: 'p1',
      caller,
      callerKey: 'user:ann',
      subscriptions: [],
      lastEventId: undefined,
      expiresAtMs: null,
      recheck: async () => { if (failRecheck) throw new Error('session ended'); return caller }
    })
  }
  // Both start before either has awaited anything: with the count written after the awaits, both passed a limit of one.
  const outcomes = await Promise.allSettled([connect(), connect()])
  t.same(outcomes.map((outcome) => outcome.status).sort(), ['fulfilled', 'rejected'], 'one of two overlapping connects is refused')
  t.match((outcomes.find((outcome) => outcome.status === 'rejected') as PromiseRejectedResult).reason, { code: 'APP_REALTIME_TOO_MANY_CONNECTIONS' })
  t.equal(hub.size, 1)
  hub.forget((outcomes.find((outcome) => outcome.status === 'fulfilled') as PromiseFulfilledResult<Awaited<ReturnType<typeof connect>>>).value)
  await hub.settled()
  failRecheck = true
  await t.rejects(connect(), { message: 'session ended' })
  failRecheck = false
  t.equal((await connect()).closed, false, 'the failed connect gave its place back')
})
