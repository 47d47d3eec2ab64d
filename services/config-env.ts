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
