import type { Clock } from '../platform/clock.js'
import type { SecretBox } from '../platform/crypto.js'
import { hostingErrors } from './errors.js'
import type { Store, StoreCollection } from '../store/types.js'
import { isoString } from '../platform/iso-dates.js'
import { HOSTING_LIMITS, type SecretT } from '../../schemas/hosting.js'
import { sealedAt, type SealedValues } from '../platform/reseal.js'

const HOSTING_SECRETS = 'hosting_secrets'

type SecretRecord = {
  _id: string
  appId: string
  projectId: string
  name: string
  version: number
  sealed: string
  /** Also given to builds; absent on secrets written before the flag existed, which are runtime only. */
  buildTime?: boolean
  updatedAt: Date
}

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/
/** Set by the platform on every instance; an app secret may not shadow them. */
const RESERVED = new Set(['PORT', 'HOST', 'PLINTH_INSTANCE_ID', 'PLINTH_APP_ID', 'PLINTH_DEPLOYMENT_ID'])
export const MASK = '********'

const sealedFor = (appId: string, name: string): string => `hosting-secret:${appId}:${name}`

/** Apps' secrets, sealed under the master key, for the re-seal job. */
export const sealedAppSecrets: SealedValues = {
  collection: HOSTING_SECRETS,
  values: (doc) => sealedAt(doc, 'sealed', sealedFor(doc.appId as string, doc.name as string))
}

function checkName (name: string, path: string): string {
  if (!NAME.test(name) || name.length > 128) throw hostingErrors.secretInvalid({ message: `"${name.slice(0, 40)}" is not an environment variable name`, path, why: 'must be letters, digits and _, not starting with a digit' })
  if (RESERVED.has(name)) throw hostingErrors.secretInvalid({ message: `${name} is set by the platform`, path, why: 'is reserved' })
  return name
}

/**
 * Reads a `.env` text: `NAME=value`, an optional `export ` prefix, values in
 * single quotes (as is), double quotes (with \n, \" and \\ escapes) or bare
 * (up to a ` #` comment); blank and `#` lines are skipped. A line that is none
 * of these is refused with its number.
 */
export function parseEnv (text: string): Array<[string, string]> {
  const entries: Array<[string, string]> = []
  const lines = text.split(/\r?\n/)
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].trim()
    if (line === '' || line.startsWith('#')) continue
    const match = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$/.exec(line)
    if (match === null) throw hostingErrors.envInvalid({ line: i + 1, problem: 'is not NAME=value' })
    const [, name, raw] = match
    let value: string
    if (raw.startsWith('"')) {
      const end = /^"((?:[^"\\]|\\.)*)"\s*(?:#.*)?$/.exec(raw)
      if (end === null) throw hostingErrors.envInvalid({ line: i + 1, problem: 'has an unterminated quote' })
      value = end[1].replace(/\\(.)/g, (_all, char: string) => char === 'n' ? '\n' : char)
    } else if (raw.startsWith('\'')) {
      const end = /^'([^']*)'\s*(?:#.*)?$/.exec(raw)
      if (end === null) throw hostingErrors.envInvalid({ line: i + 1, problem: 'has an unterminated quote' })
      value = end[1]
    } else {
      value = raw.replace(/\s+#.*$/, '').trim()
    }
    entries.push([checkName(name, 'body.env'), value])
  }
  return entries
}

/**
 * An app's secrets: sealed at rest under a context naming the app and the
 * secret, listed by name and version only. Instances get them all as
 * environment variables; builds only those marked `buildTime`, since a build
 * runs the code of every dependency it installs. Every log line is masked
 * with all their values.
 */
export class AppSecrets {
  private readonly secrets: StoreCollection<SecretRecord>

  constructor (store: Store, private readonly deps: { clock: Clock, box: SecretBox }) {
    this.secrets = store.collection<SecretRecord>(HOSTING_SECRETS)
  }

  async init (): Promise<void> {
    await this.secrets.createIndex({ appId: 1, name: 1 }, { unique: true })
  }

  async list (appId: string): Promise<SecretT[]> {
    const records = await this.secrets.find({ appId }, { sort: { name: 1 }, projection: { sealed: 0 } }).toArray()
    return records.map((record) => secretView(record))
  }

  /** Sets one secret; a new one counts against the app's limit. `buildTime` omitted keeps the secret's setting (off for a new one). */
  async put (app: { _id: string, projectId: string }, name: string, value: string, buildTime?: boolean): Promise<SecretT> {
    return (await this.putAll(app, [[checkName(name, 'params.name'), value]], buildTime))[0]
  }

  /** Sets every entry of a `.env` text, in one go; `buildTime` as for `put`, for each of them. */
  async import (app: { _id: string, projectId: string }, text: string, buildTime?: boolean): Promise<SecretT[]> {
    const entries = parseEnv(text)
    if (entries.length === 0) throw hostingErrors.envInvalid({ problem: 'sets no variable' })
    return await this.putAll(app, [...new Map(entries)], buildTime)
  }

  private async putAll (app: { _id: string, projectId: string }, entries: Array<[string, string]>, buildTime: boolean | undefined): Promise<SecretT[]> {
    const existing = new Set((await this.list(app._id)).map((secret) => secret.name))
    const added = entries.filter(([name]) => !existing.has(name)).length
    if (existing.size + added > HOSTING_LIMITS.secretsPerApp) throw hostingErrors.secretsLimit({ limit: HOSTING_LIMITS.secretsPerApp })
    const now = this.deps.clock.now()
    const written: SecretT[] = []
    for (const [name, value] of entries) {
      if (Buffer.byteLength(value) > HOSTING_LIMITS.secretValueBytes) throw hostingErrors.secretInvalid({ message: `${name} is longer than ${HOSTING_LIMITS.secretValueBytes} bytes`, limit: HOSTING_LIMITS.secretValueBytes })
      const record = await this.secrets.findOneAndUpdate(
        { _id: `${app._id}:${name}` },
        {
          $set: { appId: app._id, projectId: app.projectId, name, sealed: this.deps.box.seal(value, sealedFor(app._id, name)), updatedAt: now, ...(buildTime === undefined ? {} : { buildTime }) },
          $inc: { version: 1 },
          ...(buildTime === undefined ? { $setOnInsert: { buildTime: false } } : {})
        },
        { upsert: true, returnDocument: 'after' }
      )
      if (record !== null) written.push(secretView(record))
    }
    return written
  }

  async delete (appId: string, name: string): Promise<void> {
    const { deletedCount } = await this.secrets.deleteOne({ _id: `${appId}:${name}` })
    if (deletedCount === 0) throw hostingErrors.secretNotFound({ name })
  }

  /** Every value, opened, for an instance's environment and for masking logs. */
  async environment (appId: string): Promise<Record<string, string>> {
    return this.opened(appId, await this.secrets.find({ appId }).toArray())
  }

  /** The values of the secrets marked `buildTime`, opened, for a build's environment. */
  async buildEnvironment (appId: string): Promise<Record<string, string>> {
    return this.opened(appId, await this.secrets.find({ appId, buildTime: true }).toArray())
  }

  private opened (appId: string, records: SecretRecord[]): Record<string, string> {
    const env: Record<string, string> = {}
    for (const record of records) env[record.name] = this.deps.box.open(record.sealed, sealedFor(appId, record.name))
    return env
  }

  async deleteForApp (appId: string): Promise<void> {
    await this.secrets.deleteMany({ appId })
  }
}

function secretView (record: Omit<SecretRecord, 'sealed'>): SecretT {
  return { name: record.name, version: record.version, buildTime: record.buildTime === true, updatedAt: isoString(record.updatedAt) }
}

/** Replaces every secret value in a line with the mask, longest first so one value inside another is masked whole. */
export function masker (values: string[]): (line: string) => string {
  const secrets = [...new Set(values.filter((value) => value.length >= 3))].sort((a, b) => b.length - a.length)
  if (secrets.length === 0) return (line) => line
  return (line) => {
    let masked = line
    for (const value of secrets) masked = masked.split(value).join(MASK)
    return masked
  }
}
