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

/** A host name of two labels or more, lower case, without the trailing dot. */
export const DNS_NAME = /^(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/

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
