import { dnsErrors } from './errors.js'

/**
 * Domain names as the API shows them: lower case, absolute, without the
 * trailing dot (`www.example.com`). DNS compares names case-insensitively
 * (RFC 4343), so one spelling is kept and every lookup lower-cases first.
 */

export const MAX_NAME_LENGTH = 253
const LABEL = /^(?:[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?)$/

/** Null when `name` is a valid absolute name (no trailing dot), else why not. A `*` is allowed as the leftmost label only. */
export function nameProblem (name: string, options: { wildcard?: boolean } = {}): string | null {
  if (name === '') return 'it is empty'
  if (name.length > MAX_NAME_LENGTH) return `it is longer than ${MAX_NAME_LENGTH} characters`
  const labels = name.split('.')
  for (const [index, label] of labels.entries()) {
    if (label === '*' && index === 0 && options.wildcard === true) continue
    if (label === '') return 'it has an empty label'
    if (label.length > 63) return `the label "${label.slice(0, 20)}…" is longer than 63 characters`
    if (!LABEL.test(label)) return `the label "${label}" may hold only letters, digits, "-" and "_", and not begin or end with "-"`
  }
  return null
}

function stripDot (input: string): string {
  return input.endsWith('.') ? input.slice(0, -1) : input
}

/** A zone's name: lower case, one trailing dot dropped, at least two labels (no TLD or root zones). */
export function zoneName (input: string, path = 'body.name'): string {
  const name = stripDot(input.trim().toLowerCase())
  const problem = nameProblem(name) ?? (name.includes('.') ? null : 'a zone needs at least two labels, such as example.com')
  if (problem !== null) throw dnsErrors.invalidName({ input, why: problem, path })
  return name
}

export function isInZone (name: string, zone: string): boolean {
  return name === zone || name.endsWith(`.${zone}`)
}

/**
 * A record's owner name inside `zone`: `@` (or empty) is the apex; a name
 * with a trailing dot is absolute; one without is absolute when it already
 * ends with the zone's name, else relative to it. Absolute names outside the
 * zone are refused.
 */
export function ownerName (input: string, zone: string, path = 'body.name'): string {
  const trimmed = input.trim().toLowerCase()
  let name: string
  if (trimmed === '@' || trimmed === '') name = zone
  else if (trimmed.endsWith('.')) name = trimmed.slice(0, -1)
  else name = isInZone(trimmed, zone) ? trimmed : `${trimmed}.${zone}`
  const problem = nameProblem(name, { wildcard: true })
  if (problem !== null) throw dnsErrors.invalidName({ input, why: problem, path })
  if (!isInZone(name, zone)) {
    throw dnsErrors.nameOutsideZone({ input, zone, path })
  }
  return name
}

/** A target name in record data (CNAME, NS, MX, SRV, SOA): absolute, trailing dot optional; `.` when `root` is allowed (null MX, "no service" SRV). */
export function targetName (input: string, path: string, options: { root?: boolean } = {}): string {
  const trimmed = input.trim().toLowerCase()
  if (trimmed === '.' && options.root === true) return '.'
  const name = stripDot(trimmed)
  const problem = nameProblem(name)
  if (problem !== null) throw dnsErrors.invalidName({ input, why: problem, path })
  return name
}

/** `name` relative to `zone` for a zone file: `@` for the apex, else the labels in front of it. */
export function relativeName (name: string, zone: string): string {
  return name === zone ? '@' : name.slice(0, -(zone.length + 1))
}
