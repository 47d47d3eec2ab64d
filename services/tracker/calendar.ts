import { RELATIVE_DAY } from '../../schemas/tracker-filters.js'
import { BoundedMap } from '../cache/bounded-map.js'
import { trackerErrors } from './errors.js'

/**
 * Calendar days (`YYYY-MM-DD`) and the instants they span in a tracker
 * project's timezone. Day arithmetic is done on UTC midnights, where no day
 * is ever 23 or 25 hours long; only turning a day into an instant asks the
 * timezone.
 */

const MS_PER_DAY = 86_400_000
const DAY = /^(\d{4})-(\d{2})-(\d{2})$/

/** The timezone's canonical name; 400 for a name Intl does not know. */
export function checkTimezone (timezone: string): string {
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone: timezone }).resolvedOptions().timeZone
  } catch {
    throw trackerErrors.invalidTimezone({ timezone })
  }
}

export function isDay (value: unknown): value is string {
  if (typeof value !== 'string') return false
  const match = DAY.exec(value)
  if (match === null) return false
  const date = new Date(Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3])))
  return dayOf(date) === value && Number(match[1]) >= 1
}

/** The UTC midnight of a day, as ms: what the arithmetic below works on. */
function utcMs (day: string): number {
  const match = DAY.exec(day) as RegExpExecArray
  return Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3]))
}

function dayOf (utcMidnight: Date): string {
  return utcMidnight.toISOString().slice(0, 10)
}

export function addDays (day: string, days: number): string {
  return dayOf(new Date(utcMs(day) + days * MS_PER_DAY))
}

/** Months ahead (or back), the day of the month kept where the month has it and the month's last day otherwise. */
export function addMonths (day: string, months: number): string {
  const date = new Date(utcMs(day))
  const target = new Date(Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + months, 1))
  const lastDay = new Date(Date.UTC(target.getUTCFullYear(), target.getUTCMonth() + 1, 0)).getUTCDate()
  target.setUTCDate(Math.min(date.getUTCDate(), lastDay))
  return dayOf(target)
}

/** Whole days from `from` to `to` (negative when `to` comes first). */
export function daysBetween (from: string, to: string): number {
  return Math.round((utcMs(to) - utcMs(from)) / MS_PER_DAY)
}

/** Every day from `start` through `end`. */
export function daysFrom (start: string, end: string): string[] {
  const days: string[] = []
  for (let day = start; day <= end; day = addDays(day, 1)) days.push(day)
  return days
}

/** Monday is 0, Sunday 6 (ISO weeks). */
function weekday (day: string): number {
  return (new Date(utcMs(day)).getUTCDay() + 6) % 7
}

/**
 * A wall-clock formatter per timezone: making one costs ~8 times formatting
 * with it, and a list whose filter names a relative day reads the clock four
 * times (bench/README.md, the tracker's list rows). Formatters of a
 * timezone are all alike and never change, so any one kept will do.
 */
const formatters = new BoundedMap<string, Intl.DateTimeFormat>(64)

function wallClock (instant: Date, timezone: string): Record<string, number> {
  // A project's default timezone: its wall clock is the instant's UTC fields, with no formatter to ask.
  if (timezone === 'UTC') {
    return { year: instant.getUTCFullYear(), month: instant.getUTCMonth() + 1, day: instant.getUTCDate(), hour: instant.getUTCHours(), minute: instant.getUTCMinutes(), second: instant.getUTCSeconds() }
  }
  let formatter = formatters.get(timezone)
  if (formatter === undefined) {
    formatter = new Intl.DateTimeFormat('en-US', {
      timeZone: timezone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit'
    })
    formatters.set(timezone, formatter)
  }
  const parts = formatter.formatToParts(instant)
  const fields: Record<string, number> = {}
  for (const part of parts) if (part.type !== 'literal') fields[part.type] = Number(part.value)
  return fields
}

/** The day an instant falls on in `timezone`. */
export function localDay (instant: Date, timezone: string): string {
  const wall = wallClock(instant, timezone)
  // Every list with a relative day asks this: written from the fields, as toISOString writes a four-digit year.
  if (wall.year >= 1000 && wall.year <= 9999) return `${wall.year}-${wall.month < 10 ? '0' : ''}${wall.month}-${wall.day < 10 ? '0' : ''}${wall.day}`
  return dayOf(new Date(Date.UTC(wall.year, wall.month - 1, wall.day)))
}

/** How far the timezone's wall clock is ahead of UTC at `instant`, in ms. */
function offsetAt (instant: Date, timezone: string): number {
  const wall = wallClock(instant, timezone)
  const asUtc = Date.UTC(wall.year, wall.month - 1, wall.day, wall.hour, wall.minute, wall.second)
  return asUtc - Math.floor(instant.getTime() / 1000) * 1000
}

/** The first instant of `day` in `timezone` (a day that starts in a DST gap starts when the gap ends). */
export function startOfDay (day: string, timezone: string): Date {
  const midnight = utcMs(day)
  let guess = midnight - offsetAt(new Date(midnight), timezone)
  // The offset at the guess may differ from the one at UTC midnight across a transition: settle on it.
  guess = midnight - offsetAt(new Date(guess), timezone)
  if (localDay(new Date(guess), timezone) !== day) guess += 3_600_000
  return new Date(guess)
}

const RELATIVE = new RegExp(RELATIVE_DAY)

/**
 * A relative day (`-7d`, `startOfWeek`, `endOfMonth+1d`) from `today`, or
 * null when `token` is not one. Weeks start on Monday.
 */
export function relativeDay (token: string, today: string): string | null {
  if (token === '') return null
  const match = RELATIVE.exec(token)
  if (match === null) return null
  let day = today
  switch (match[1]) {
    case 'yesterday': day = addDays(today, -1); break
    case 'tomorrow': day = addDays(today, 1); break
    case 'startOfWeek': day = addDays(today, -weekday(today)); break
    case 'endOfWeek': day = addDays(today, 6 - weekday(today)); break
    case 'startOfMonth': day = `${today.slice(0, 8)}01`; break
    case 'endOfMonth': day = addDays(addMonths(`${today.slice(0, 8)}01`, 1), -1); break
    case 'startOfYear': day = `${today.slice(0, 4)}-01-01`; break
    case 'endOfYear': day = `${today.slice(0, 4)}-12-31`; break
  }
  if (match[2] !== undefined) {
    const sign = match[2][0] === '-' ? -1 : 1
    const amount = sign * Number(match[2].slice(1, -1))
    const unit = match[2].slice(-1)
    if (unit === 'd') day = addDays(day, amount)
    else if (unit === 'w') day = addDays(day, amount * 7)
    else if (unit === 'm') day = addMonths(day, amount)
    else day = addMonths(day, amount * 12)
  }
  return isDay(day) ? day : null
}
