/**
 * `Date.prototype.toISOString` for years 0000-9999, computed in JavaScript:
 * V8's own goes through snprintf and costs about three times as much, which
 * shows on pages of records with two timestamps each. Other years, and
 * invalid dates (which throw), are left to V8.
 */
const MS_PER_DAY = 86_400_000
// 0000-01-01T00:00:00.000Z and 10000-01-01T00:00:00.000Z.
const FIRST_MS = -62_167_219_200_000
const END_MS = 253_402_300_800_000

const two = (n: number): string => (n < 10 ? '0' : '') + n
const three = (n: number): string => (n < 10 ? '00' : n < 100 ? '0' : '') + n
const four = (n: number): string => (n < 10 ? '000' : n < 100 ? '00' : n < 1000 ? '0' : '') + n

export function isoString (date: Date): string {
  const ms = date.getTime()
  if (!(ms >= FIRST_MS && ms < END_MS)) return date.toISOString()
  const days = Math.floor(ms / MS_PER_DAY)
  let rest = ms - days * MS_PER_DAY
  // Civil date from days since 1970-01-01, after Howard Hinnant's days_from_civil inverse.
  const z = days + 719_468
  const era = Math.floor(z / 146_097)
  const dayOfEra = z - era * 146_097
  const yearOfEra = Math.floor((dayOfEra - Math.floor(dayOfEra / 1460) + Math.floor(dayOfEra / 36_524) - Math.floor(dayOfEra / 146_096)) / 365)
  const dayOfYear = dayOfEra - (365 * yearOfEra + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100))
  const shiftedMonth = Math.floor((5 * dayOfYear + 2) / 153)
  const day = dayOfYear - Math.floor((153 * shiftedMonth + 2) / 5) + 1
  const month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
  const year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
  const hours = Math.floor(rest / 3_600_000)
  rest -= hours * 3_600_000
  const minutes = Math.floor(rest / 60_000)
  rest -= minutes * 60_000
  const seconds = Math.floor(rest / 1000)
  return `${four(year)}-${two(month)}-${two(day)}T${two(hours)}:${two(minutes)}:${two(seconds)}.${three(rest - seconds * 1000)}Z`
}

/** isoString of a date that may be absent. */
export function isoStringOrNull (date: Date | null | undefined): string | null {
  return date === null || date === undefined ? null : isoString(date)
}

const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(Z|[+-](\d{2}):(\d{2})))?$/
const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]

function daysIn (year: number, month: number): number {
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0)
  return month === 2 && leap ? 29 : DAYS_IN_MONTH[month - 1]
}

/**
 * The one reader of dates clients send: `2024-02-29`, or a date-time with
 * its zone (`2024-02-29T10:00Z`, seconds and fractions optional). Null for
 * anything else, including days that do not exist (`2024-02-30`), which
 * `Date` would silently roll over into March.
 */
export function parseIsoDate (value: unknown): Date | null {
  if (typeof value !== 'string') return null
  const match = ISO_DATE.exec(value)
  if (match === null) return null
  const [, year, month, day, hours, minutes, seconds, , offsetHours, offsetMinutes] = match.map((part) => part === undefined ? undefined : Number(part))
  if (month === undefined || month < 1 || month > 12 || day === undefined || day < 1 || day > daysIn(year as number, month)) return null
  if (hours !== undefined && (hours > 23 || (minutes as number) > 59 || (seconds ?? 0) > 59)) return null
  if (offsetHours !== undefined && (offsetHours > 23 || (offsetMinutes as number) > 59)) return null
  const date = new Date(value)
  return Number.isNaN(date.getTime()) ? null : date
}
