import t from 'tap'
import type { Document, Store, StoreCollection } from '../../../services/store/types.js'
import { refusal } from '../../helper.js'
import { DAY, people, trackerOn } from './fixture.js'

/**
 * A Store whose cycle-day claims are written only once `size` writers have
 * come to write them: every create has made its checks by then, so only the
 * claims themselves can keep two overlapping cycles apart.
 */
function meetingAtClaims (size: number): (store: Store) => Store {
  return (store) => {
    let waiting = 0
    let release = (): void => {}
    const reached = new Promise<void>((resolve) => { release = resolve })
    const meeting: Store = Object.create(store)
    meeting.collection = <T extends Document>(name: string): StoreCollection<T> => {
      const inner = store.collection<T>(name)
      if (name !== 'tracker_cycle_days') return inner
      const wrapped: StoreCollection<T> = Object.create(inner)
      wrapped.insertMany = async (documents) => {
        if (++waiting === size) release()
        await reached
        return await inner.insertMany(documents)
      }
      return wrapped
    }
    return meeting
  }
}

const races: Array<[string, [string, string], [string, string]]> = [
  ['the same dates', ['2026-03-02', '2026-03-13'], ['2026-03-02', '2026-03-13']],
  ['one inside the other', ['2026-03-01', '2026-03-31'], ['2026-03-10', '2026-03-12']],
  ['sharing one day', ['2026-03-02', '2026-03-13'], ['2026-03-13', '2026-03-27']]
]

for (const [what, first, second] of races) {
  t.test(`two overlapping cycles created at once never both exist: ${what}`, async (t) => {
    const { tracker, project } = await trackerOn(t, meetingAtClaims(2))
    const { bob, carol } = await project()
    const outcomes = await Promise.allSettled([
      tracker.cycles.create(bob, { name: 'A', startDate: first[0], endDate: first[1] }),
      tracker.cycles.create(carol, { name: 'B', startDate: second[0], endDate: second[1] })
    ])
    t.same(outcomes.map((outcome) => outcome.status).sort(), ['fulfilled', 'rejected'], 'one wins, one is refused')
    const refused = outcomes.find((outcome) => outcome.status === 'rejected') as PromiseRejectedResult
    t.match(refused.reason, { status: 409, code: 'APP_TRACKER_CYCLE_OVERLAP' })
    t.equal((await tracker.cycles.list(bob, {})).items.length, 1, 'and leaves no cycle behind')
  })
}

t.test('cycles a day apart both pass the race', async (t) => {
  const { tracker, project } = await trackerOn(t, meetingAtClaims(2))
  const { bob, carol } = await project()
  const outcomes = await Promise.allSettled([
    tracker.cycles.create(bob, { name: 'A', startDate: '2026-03-02', endDate: '2026-03-13' }),
    tracker.cycles.create(carol, { name: 'B', startDate: '2026-03-14', endDate: '2026-03-27' })
  ])
  t.same(outcomes.map((outcome) => outcome.status), ['fulfilled', 'fulfilled'])
})

t.test('a claim left by a create that died is taken back after a minute', async (t) => {
  const { tracker, project, store, clock } = await trackerOn(t)
  const { lpId, bob } = await project()
  // What a create leaves when it dies between its claims and its cycle.
  await store.collection('tracker_cycle_days').insertMany(['2026-03-05', '2026-03-06'].map((day) => ({ _id: `${lpId}:${day}`, lpId, cycleId: 'never-written', day, claimedAt: clock.now() })))
  t.match(await refusal(tracker.cycles.create(bob, { name: 'A', startDate: '2026-03-02', endDate: '2026-03-13' })), { status: 409, code: 'APP_TRACKER_CYCLE_OVERLAP', message: /being created/ }, 'a young claim may still be a create on its way')
  clock.advance(2 * 60_000)
  const cycle = await tracker.cycles.create(bob, { name: 'A', startDate: '2026-03-02', endDate: '2026-03-13' })
  t.equal(cycle.startDate, '2026-03-02')
})

t.test('moving a cycle claims its new days first and lets the old ones go', async (t) => {
  const { tracker, project, store } = await trackerOn(t)
  const { bob } = await project()
  const a = await tracker.cycles.create(bob, { name: 'A', startDate: '2026-03-09', endDate: '2026-03-13' })
  const b = await tracker.cycles.create(bob, { name: 'B', startDate: '2026-03-16', endDate: '2026-03-20' })
  t.match(await refusal(tracker.cycles.update(bob, a.id, { endDate: '2026-03-16' })), { status: 409, code: 'APP_TRACKER_CYCLE_OVERLAP', message: /"B"/ })
  const moved = await tracker.cycles.update(bob, a.id, { startDate: '2026-03-23', endDate: '2026-03-27' }, a.version)
  t.equal(moved.version, 2)
  t.equal(await store.collection('tracker_cycle_days').countDocuments({ cycleId: a.id }), 5, 'five days held, the old ones let go')
  const c = await tracker.cycles.create(bob, { name: 'C', startDate: '2026-03-09', endDate: '2026-03-13' })
  t.equal(c.status, 'upcoming', 'the days A left are free again')
  t.match(await refusal(tracker.cycles.update(bob, b.id, { name: 'B2' }, 7)), { status: 412, code: 'APP_TRACKER_VERSION_MISMATCH' })
  t.match(await refusal(tracker.cycles.create(bob, { name: 'D', startDate: '2026-03-09' })), { status: 400, code: 'APP_TRACKER_INVALID_VALUE' }, 'both dates or neither')
  t.match(await refusal(tracker.cycles.create(bob, { name: 'D', startDate: '2026-03-09', endDate: '2026-03-01' })), { status: 400, message: /before startDate/ })
  t.equal((await tracker.cycles.create(bob, { name: 'Someday' })).status, 'draft')
})

t.test('status follows the project\'s timezone; a completed cycle is read-only', async (t) => {
  const { tracker, project, clock, scope } = await trackerOn(t)
  const { lpId, admin, bob } = await project('TZ', { timezone: 'Pacific/Auckland' })
  // 2026-03-13 20:00 UTC is already Saturday 14 March in Auckland.
  clock.set(Date.UTC(2026, 2, 13, 20))
  const cycle = await tracker.cycles.create(bob, { name: 'Ends Friday', startDate: '2026-03-09', endDate: '2026-03-13' })
  t.equal(cycle.status, 'completed')
  const item = await tracker.workItems.create(bob, { title: 'Late' })
  t.match(await refusal(tracker.workItems.update(bob, item.id, { cycleId: cycle.id })), { status: 409, code: 'APP_TRACKER_CYCLE_COMPLETED' })
  t.match(await refusal(tracker.cycles.update(bob, cycle.id, { name: 'Renamed' })), { status: 409, code: 'APP_TRACKER_CYCLE_COMPLETED' })
  await tracker.projects.update(admin, { timezone: 'UTC' })
  t.equal((await tracker.cycles.get(await scope(people.bob, lpId), cycle.id)).status, 'current', 'in UTC it is still Friday')
})

t.test('a transfer moves unfinished items and freezes the progress they leave', async (t) => {
  const { tracker, project, clock, runFollowUps } = await trackerOn(t)
  const { bob, admin } = await project()
  const states = (await tracker.states.list(admin, {})).items
  const done = states.find((state) => state.group === 'completed')?.id as string
  const one = await tracker.cycles.create(bob, { name: 'One', startDate: '2026-03-02', endDate: '2026-03-06' })
  const two = await tracker.cycles.create(bob, { name: 'Two', startDate: '2026-03-09', endDate: '2026-03-13' })
  const items = []
  for (let n = 0; n < 5; n++) items.push(await tracker.workItems.create(bob, { title: `T${n}`, cycleId: one.id }))
  for (const item of items.slice(0, 2)) await tracker.workItems.update(bob, item.id, { stateId: done })
  clock.advance(7 * DAY)
  t.equal((await tracker.cycles.get(bob, one.id)).status, 'completed')
  t.match(await refusal(tracker.flows.transfer(bob, one.id, one.id)), { status: 409, code: 'APP_TRACKER_TRANSFER_TARGET' })
  const result = await tracker.flows.transfer(bob, one.id, two.id)
  t.equal(result.moved, 3)
  t.match(result.snapshot, { total: 5, completed: 2, backlog: 3 })
  const after = await tracker.cycles.get(bob, one.id)
  t.match(after, { status: 'completed', transferredTo: two.id, progress: { total: 5, completed: 2 } }, 'the completed cycle shows its frozen progress')
  t.equal((await tracker.cycles.get(bob, two.id)).progress.total, 3)
  const moves = (await tracker.activity.list(bob, items[4].id, {})).items.filter((entry) => entry.field === 'cycle')
  t.same(moves.map((entry) => [entry.from, entry.to, entry.actorId, entry.automation]), [[one.id, two.id, 'bob', false]], 'the move is in the item\'s activity, as the person who asked')
  t.ok(await runFollowUps() > 0)
  t.equal((await tracker.cycles.get(bob, two.id)).progress.total, 3, 'the follow-up run again changes nothing')
})

t.test('a deleted cycle lets its items go and its days free', async (t) => {
  const { tracker, project } = await trackerOn(t)
  const { bob, carol } = await project()
  const cycle = await tracker.cycles.create(bob, { name: 'Gone', startDate: '2026-03-02', endDate: '2026-03-06' })
  const item = await tracker.workItems.create(bob, { title: 'In it', cycleId: cycle.id })
  t.match(await refusal(tracker.cycles.delete(carol, cycle.id)), { status: 403, code: 'APP_TRACKER_NOT_YOURS' })
  await tracker.cycles.delete(bob, cycle.id)
  t.equal((await tracker.workItems.get(bob, item.id)).cycleId, null)
  t.match(await refusal(tracker.cycles.get(bob, cycle.id)), { status: 404 })
  t.ok(await tracker.cycles.create(bob, { name: 'Again', startDate: '2026-03-02', endDate: '2026-03-06' }))
})

t.test('guests and projects without cycles are refused', async (t) => {
  const { tracker, project, scope } = await trackerOn(t)
  const { lpId, gina, admin } = await project()
  t.match(await refusal(tracker.cycles.list(gina, {})), { status: 403, code: 'APP_TRACKER_GUEST_REFUSED' })
  await tracker.projects.update(admin, { features: { cycles: false } })
  t.match(await refusal(tracker.cycles.list(await scope(people.bob, lpId), {})), { status: 409, code: 'APP_TRACKER_FEATURE_DISABLED' })
})
