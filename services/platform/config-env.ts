import { isIP } from 'node:net'
import { normalizeOrigin } from './origins.js'

/**
 * Reading environment variables, for services/config.ts and the families'
 * own settings (services/<family>/config.ts): every refusal names its variable.
 */

export type Env = Record<string, string | undefined>

export class ConfigError extends Error {
  constructor (readonly variable: string, message: string) {
    super(`Invalid configuration: ${variable} ${message}`)
    this.name = 'ConfigError'
  }
}

/** What a variable names (the database, a port) could not be had at start: the server exits with EX_UNAVAILABLE (69). */
export class UnavailableAtStartError extends Error {
  constructor (readonly variable: string, message: string) {
    super(`Cannot start: ${variable} ${message}`)
    this.name = 'UnavailableAtStartError'
  }
}

/** The variable's value trimmed; unset and blank are the same. */
export function text (env: Env, name: string): string | undefined {
  const value = env[name]
  if (value === undefined) return undefined
  const trimmed = value.trim()
  return trimmed === '' ? undefined : trimmed
}

/** A comma-separated list, each entry trimmed (and `normalize`d), blanks dropped. */
export function list (env: Env, name: string, normalize: (entry: string) => string = (entry) => entry): string[] {
  return (text(env, name) ?? '').split(',').map((entry) => normalize(entry.trim())).filter((entry) => entry !== '')
}

export function integer (env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = text(env, name)
  if (raw === undefined) return fallback
  if (!/^\d+$/.test(raw)) throw new ConfigError(name, `must be a whole number, got "${raw}"`)
  const value = Number(raw)
  if (value < min || value > max) throw new ConfigError(name, `must be between ${min} and ${max}, got ${value}`)
  return value
}

const TRUE_WORDS = ['1', 'true', 'yes', 'on']
const FALSE_WORDS = ['0', 'false', 'no', 'off']

/** A switch: the words for on and off, either way; unset is the fallback. */
export function flag (env: Env, name: string, fallback: boolean): boolean {
  const raw = text(env, name)?.toLowerCase()
  if (raw === undefined) return fallback
  if (TRUE_WORDS.includes(raw)) return true
  if (FALSE_WORDS.includes(raw)) return false
  throw new ConfigError(name, `must be one of ${[...TRUE_WORDS, ...FALSE_WORDS].join(', ')}, got "${raw}"`)
}

/** A host name of two labels or more, lower case, without the trailing dot. */
export const DNS_NAME = /^(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/

/** A CIDR range or a single address, IPv4 or IPv6. */
export function isAddressOrRange (entry: string): boolean {
  const [address, prefix, extra] = entry.split('/')
  const family = isIP(address)
  if (family === 0 || extra !== undefined) return false
  if (prefix === undefined) return true
  return /^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128)
}

const HOST_LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/

/** A host name (one label or more, `*.` before a suffix of two or more), an address or a CIDR range. */
function isAllowedHostEntry (entry: string): boolean {
  if (isAddressOrRange(entry)) return true
  const name = entry.startsWith('*.') ? entry.slice(2) : entry
  const labels = name.split('.')
  return name.length <= 253 && labels.every((label) => HOST_LABEL.test(label)) && (name === entry || labels.length >= 2)
}

/**
 * What an operator lets outbound calls reach although it is internal (the
 * one guard, services/outbound/internal-addresses.ts): host names (`git.internal`),
 * `*.suffix` wildcards, IP addresses (brackets and a trailing dot dropped)
 * and CIDR ranges, lower case.
 */
export function allowedHostList (env: Env, name: string): string[] {
  const entries = list(env, name, (entry) => entry.toLowerCase().replace(/^\[([^\]]*)\]/, '$1').replace(/\.$/, ''))
  const bad = entries.find((entry) => !isAllowedHostEntry(entry))
  if (bad !== undefined) throw new ConfigError(name, `must be a comma-separated list of host names (git.internal, *.corp.example), IP addresses or CIDR ranges (10.0.0.0/8, fd00::/8), got "${bad}"`)
  return entries
}

/** An absolute http(s) URL. */
export function parseHttpUrl (name: string, raw: string): URL {
  let url: URL
  try { url = new URL(raw) } catch { throw new ConfigError(name, `must be an absolute http(s) URL, got "${raw}"`) }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ConfigError(name, `must use http or https, got "${url.protocol}"`)
  return url
}

/** An absolute http(s) URL, without its trailing slash. */
export function httpUrl (name: string, raw: string): string {
  return parseHttpUrl(name, raw).toString().replace(/\/$/, '')
}

/** A comma-separated list of origins (`https://app.example.com`), as browsers send them. */
export function origins (env: Env, name: string): string[] {
  return list(env, name).map((entry) => {
    const origin = normalizeOrigin(entry)
    if (origin === null) throw new ConfigError(name, `must be a comma-separated list of origins such as https://app.example.com, got "${entry}"`)
    return origin
  })
}
