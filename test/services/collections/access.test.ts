import t from 'tap'
import { ManualClock } from '../../../services/platform/clock.js'
import { resolveAccess, type DataCaller } from '../../../services/collections/access.js'
import { deepFreeze } from '../../../services/platform/deep-freeze.js'
import type { MethodSettingT } from '../../../schemas/collections.js'

/** A clock that counts how often the time was read. */
function countingClock (): { clock: ManualClock, reads: () => number } {
  const clock = new ManualClock(Date.UTC(2026, 4, 1, 12))
  let reads = 0
  const now = clock.now.bind(clock)
  clock.now = () => { reads++; return now() }
  return { clock, reads: () => reads }
}

const ann: DataCaller = { kind: 'user', id: 'ann' }

t.test('variables are substituted once per request, the same instant in filter and check', async (t) => {
  const { clock, reads } = countingClock()
  const setting = {
    enabled: true,
    rule: {
      requireAuth: true,
      filter: { $or: [{ owner: '@request.auth.id' }, { publishedAt: { $lte: '@now' } }], id: { $ne: 'hidden' } },
      check: { updatedBy: '@request.auth.id', reviewedAt: { $lte: '@now' } }
    }
  } as unknown as MethodSettingT
  const access = resolveAccess('list', setting, ann, clock)
  t.equal(reads(), 1, 'the time is read once')
  const filterNow = ((access.filter as { $or: Array<Record<string, { $lte: Date }>> }).$or[1].publishedAt.$lte)
  const checkNow = (access.check as { reviewedAt: { $lte: Date } }).reviewedAt.$lte
  t.ok(filterNow instanceof Date)
  t.equal(filterNow, checkNow, 'one instant for the whole request')
  t.same(access.filter, { $or: [{ owner: 'ann' }, { publishedAt: { $lte: new Date(Date.UTC(2026, 4, 1, 12)) } }], _id: { $ne: 'hidden' } }, 'and rule names become Store names')
  t.same(access.check, { updatedBy: 'ann', reviewedAt: { $lte: new Date(Date.UTC(2026, 4, 1, 12)) } })
})

t.test('a rule without filter or check reads no clock; masks are shared per rule', async (t) => {
  const { clock, reads } = countingClock()
  // Frozen, as rules of a definition read shared are.
  const rule = deepFreeze({ requireAuth: true, owner: 'author', deny: ['secret'], readonly: ['author'] })
  const setting = { enabled: true, rule } as unknown as MethodSettingT
  const first = resolveAccess('get', setting, ann, clock)
  const second = resolveAccess('get', setting, { kind: 'user', id: 'bob' }, clock)
  t.equal(reads(), 0)
  t.same(first.filter, { author: 'ann' })
  t.same(second.filter, { author: 'bob' })
  t.same([...first.deny], ['secret'])
  t.same([...first.readonly], ['author'])
  t.equal(first.deny, second.deny, 'the rule\'s masks are made once')
  t.throws(() => resolveAccess('get', setting, { kind: 'anonymous' }, clock), { code: 'APP_UNAUTHORIZED' })
  t.throws(() => resolveAccess('get', { enabled: false, rule } as unknown as MethodSettingT, ann, clock), { code: 'APP_METHOD_DISABLED' })
  t.throws(() => resolveAccess('get', { enabled: true, rule: null } as unknown as MethodSettingT, ann, clock), { code: 'APP_FORBIDDEN' })
  const admin = resolveAccess('get', { enabled: true, rule: null } as unknown as MethodSettingT, { kind: 'admin', userId: 'u', canRead: true, canWrite: false }, clock)
  t.same([admin.filter, admin.deny.size, admin.readonly.size], [null, 0, 0], 'admins bypass rules')
})
