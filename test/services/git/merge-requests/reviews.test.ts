import t from 'tap'
import { ManualClock } from '../../../../services/platform/clock.js'
import { newId } from '../../../../services/platform/ids.js'
import type { Mr } from '../../../../services/git/merge-requests/records.js'
import { Reviews } from '../../../../services/git/merge-requests/reviews.js'
import { tempStore } from '../../../helper.js'

t.test('a reviewer\'s latest approval or change request counts until the source moves or it is dismissed', async (t) => {
  const clock = new ManualClock(new Date('2026-01-01T00:00:00Z'))
  const reviews = new Reviews(await tempStore(t), { clock, newId })
  await reviews.init()
  const mr = { _id: 'mr1', authorId: 'ann', headSha: 'a'.repeat(40), state: 'open' } as Mr
  const tick = () => { clock.advance(1000) }
  await reviews.create(mr, 'bob', { state: 'changes_requested', body: 'no' })
  tick()
  await reviews.create(mr, 'cy', { state: 'approved' })
  tick()
  await reviews.create(mr, 'ann', { state: 'commented', body: 'fixed' })
  t.same(await reviews.tally('mr1'), { approvedBy: ['cy'], changesRequestedBy: ['bob'] })
  tick()
  await reviews.create(mr, 'bob', { state: 'approved' })
  tick()
  await reviews.create(mr, 'bob', { state: 'commented', body: 'nice' })
  t.same(await reviews.tally('mr1'), { approvedBy: ['bob', 'cy'], changesRequestedBy: [] }, 'the latest judgement wins; comments do not undo it')

  await reviews.markStale('mr1', 'b'.repeat(40))
  t.same(await reviews.tally('mr1'), { approvedBy: [], changesRequestedBy: [] }, 'a moved source makes every earlier review stale')
  const moved = { ...mr, headSha: 'b'.repeat(40) }
  const fresh = await reviews.create(moved, 'cy', { state: 'approved' })
  await reviews.markStale('mr1', 'b'.repeat(40))
  t.same((await reviews.tally('mr1')).approvedBy, ['cy'], 'a review on the current head is not made stale')
  await reviews.dismiss(mr, fresh.id, 'admin')
  t.same((await reviews.tally('mr1')).approvedBy, [])
  await t.rejects(reviews.dismiss({ ...mr, _id: 'mr2' }, fresh.id, 'admin'), { status: 404, code: 'APP_GIT_REVIEW_NOT_FOUND' }, 'another merge request\'s review')
  await t.rejects(reviews.create(mr, 'ann', { state: 'approved' }), { status: 403, code: 'APP_GIT_MR_SELF_REVIEW' })
  await t.rejects(reviews.create({ ...mr, state: 'closed' }, 'bob', { state: 'approved' }), { status: 409, code: 'APP_GIT_MR_NOT_OPEN' })
  await reviews.deleteForMergeRequests(['mr1'])
  t.same(await reviews.list(mr), [])
})
