import t from 'tap'
import { AppError } from '../../../services/platform/errors.js'
import { checkTrigger, nextFires } from '../../../services/auxiliary/schedule-times.js'

const berlin = (expression: string) => ({ kind: 'cron' as const, expression, timezone: 'Europe/Berlin' })
const iso = (dates: Date[]) => dates.map((date) => date.toISOString())
const anchor = new Date('2026-01-01T00:00:00Z')

t.test('Europe/Berlin spring-forward (29 March 2026, 02:00 → 03:00): the skipped 02:30 fires once, then an hour earlier in UTC', async (t) => {
  t.same(iso(nextFires(berlin('30 2 * * *'), anchor, new Date('2026-03-27T12:00:00Z'), 5)), [
    '2026-03-28T01:30:00.000Z', // 02:30 CET
    '2026-03-29T01:30:00.000Z', // 02:30 does not exist: once, at 03:30 CEST, just after the jump
    '2026-03-30T00:30:00.000Z', // 02:30 CEST
    '2026-03-31T00:30:00.000Z',
    '2026-04-01T00:30:00.000Z'
  ])
  t.same(iso(nextFires(berlin('0 0 * * *'), anchor, new Date('2026-03-28T12:00:00Z'), 2)), ['2026-03-28T23:00:00.000Z', '2026-03-29T22:00:00.000Z'], 'midnight moves from 23:00 to 22:00 UTC')
})

t.test('Europe/Berlin fall-back (25 October 2026, 03:00 → 02:00): the repeated 02:30 fires once', async (t) => {
  t.same(iso(nextFires(berlin('30 2 * * *'), anchor, new Date('2026-10-23T12:00:00Z'), 4)), [
    '2026-10-24T00:30:00.000Z', // 02:30 CEST
    '2026-10-25T01:30:00.000Z', // 02:30 happens twice; one fire
    '2026-10-26T01:30:00.000Z', // 02:30 CET
    '2026-10-27T01:30:00.000Z'
  ])
  const halfHours = iso(nextFires(berlin('*/30 2 * * *'), anchor, new Date('2026-10-24T22:00:00Z'), 3))
  t.same(halfHours, ['2026-10-25T01:00:00.000Z', '2026-10-25T01:30:00.000Z', '2026-10-26T01:00:00.000Z'], 'each time of the repeated hour once')
})

t.test('6 fields are seconds first; an interval counts on its grid from the anchor', async (t) => {
  t.same(iso(nextFires({ kind: 'cron', expression: '15 0 12 * * *', timezone: 'UTC' }, anchor, new Date('2026-05-01T00:00:00Z'), 1)), ['2026-05-01T12:00:15.000Z'])
  t.same(iso(nextFires({ kind: 'interval', everySeconds: 3600 }, anchor, new Date('2026-01-01T05:30:00Z'), 2)), ['2026-01-01T06:00:00.000Z', '2026-01-01T07:00:00.000Z'])
})

t.test('a bad expression, field count, timezone or interval is refused naming the field', async (t) => {
  const refused = (trigger: Parameters<typeof checkTrigger>[0]): string => {
    try {
      checkTrigger(trigger, anchor)
    } catch (error) {
      if (error instanceof AppError) return `${error.code} ${String(error.details?.fields?.[0]?.path)}`
      throw error
    }
    return 'accepted'
  }
  t.equal(refused(berlin('61 * * * *')), 'APP_SCHEDULE_INVALID body.trigger.expression')
  t.equal(refused(berlin('* * * *')), 'APP_SCHEDULE_INVALID body.trigger.expression')
  t.equal(refused(berlin('0 0 30 2 *')), 'APP_SCHEDULE_INVALID body.trigger.expression', 'never fires')
  t.equal(refused({ kind: 'cron', expression: '* * * * *', timezone: 'Mars/Olympus' }), 'APP_SCHEDULE_INVALID body.trigger.timezone')
  t.equal(refused({ kind: 'interval', everySeconds: 5 }), 'APP_SCHEDULE_INVALID body.trigger.everySeconds')
  t.equal(refused(berlin('*/5 * * * *')), 'accepted')
})
