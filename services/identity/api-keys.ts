import { identityErrors } from './errors.js'
import { orgErrors } from '../orgs/errors.js'
import { tokenView, type StoredToken } from './pat-format.js'
import { OwnedTokens } from './owned-tokens.js'
import type { Clock } from '../platform/clock.js'
import { isPermission } from '../orgs/catalogue.js'
import type { IdGenerator } from '../platform/ids.js'
import type { Store, WithId } from '../store/types.js'
import type { ApiKeyT } from '../../schemas/auth.ts'

/** A personal access token as stored: `keyId` is its public handle (services/identity/owned-tokens.ts). */
type ApiKeyRecord = StoredToken & {
  keyId: string
  userId: string
  scopes: string[]
}

export type ApiKey = ApiKeyT

/** Who a PAT authenticates, once it passed every check. */
export interface PatIdentity { userId: string, keyId: string, scopes: string[] }

const MAX_KEYS_PER_USER = 100

function toApiKey (record: WithId<ApiKeyRecord>): ApiKey {
  return { id: record.keyId, ...tokenView(record), scopes: record.scopes }
}

/** A user's personal access tokens: every active one counts against the limit, expired or not. */
export class ApiKeys {
  private readonly keys: OwnedTokens<ApiKeyRecord>

  constructor (store: Store, deps: { clock: Clock, newId: IdGenerator, prefix: string }) {
    this.keys = new OwnedTokens<ApiKeyRecord>(store, {
      collection: 'platform_api_keys',
      owner: 'userId',
      handle: 'keyId',
      limit: MAX_KEYS_PER_USER,
      expiredCount: true,
      tooMany: (limit) => identityErrors.tooManyApiKeys({ limit }),
      notFound: () => identityErrors.apiKeyNotFound()
    }, deps)
  }

  async init (): Promise<void> {
    await this.keys.init()
  }

  /** The token is returned here once and never again: only its hash is stored. */
  async create (userId: string, input: { name: string, expiresAt?: string, scopes?: string[] }): Promise<ApiKey & { token: string }> {
    const { record, token } = await this.keys.issue(userId, input, () => {
      const unknown = (input.scopes ?? []).filter((scope) => !isPermission(scope))
      if (unknown.length > 0) throw orgErrors.unknownPermission({ names: unknown, path: 'body.scopes' })
      return { scopes: [...new Set(input.scopes ?? [])].sort() }
    })
    return { ...toApiKey(record), token }
  }

  async list (userId: string): Promise<ApiKey[]> {
    return (await this.keys.list(userId)).map(toApiKey)
  }

  async revoke (userId: string, keyId: string): Promise<void> {
    await this.keys.revoke(userId, keyId)
  }

  /** Every key of a user, at once (an account taken over by its verified owner keeps none of the squatter's). */
  async revokeAll (userId: string): Promise<void> {
    await this.keys.revokeAll(userId)
  }

  /** Whether the user's key `keyId` is neither revoked nor expired. */
  async live (userId: string, keyId: string): Promise<boolean> {
    return await this.keys.live(userId, keyId)
  }

  /** Null for a malformed, unknown, revoked or expired token. */
  async authenticate (token: string): Promise<PatIdentity | null> {
    const record = await this.keys.authenticate(token)
    return record === null ? null : { userId: record.userId, keyId: record.keyId, scopes: record.scopes }
  }
}
