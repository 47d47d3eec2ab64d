import { projectErrors } from './errors.js'
import { tokenView, type StoredToken } from '../identity/pat-format.js'
import { OwnedTokens } from '../identity/owned-tokens.js'
import type { Clock } from '../platform/clock.js'
import type { IdGenerator } from '../platform/ids.js'
import type { Store, WithId } from '../store/types.js'
import type { ServiceTokenT } from '../../schemas/projects.ts'

/** A project's server credential as stored: `tokenId` is its public handle (services/identity/owned-tokens.ts). */
type ServiceTokenRecord = StoredToken & {
  tokenId: string
  projectId: string
  createdBy: string
}

export type ServiceToken = ServiceTokenT

/** Which project a service token speaks for, once it passed every check. */
export interface ServiceTokenIdentity { projectId: string, tokenId: string }

export const MAX_SERVICE_TOKENS_PER_PROJECT = 50

function toServiceToken (record: WithId<ServiceTokenRecord>): ServiceToken {
  return { id: record.tokenId, ...tokenView(record), createdBy: record.createdBy }
}

/** A project's server credentials: expired tokens do not count against the limit. */
export class ServiceTokens {
  private readonly tokens: OwnedTokens<ServiceTokenRecord>

  constructor (store: Store, deps: { clock: Clock, newId: IdGenerator, prefix: string }) {
    this.tokens = new OwnedTokens<ServiceTokenRecord>(store, {
      collection: 'project_service_tokens',
      owner: 'projectId',
      handle: 'tokenId',
      limit: MAX_SERVICE_TOKENS_PER_PROJECT,
      expiredCount: false,
      tooMany: (limit) => projectErrors.tooManyServiceTokens({ limit }),
      notFound: () => projectErrors.serviceTokenNotFound()
    }, deps)
  }

  async init (): Promise<void> {
    await this.tokens.init()
  }

  /** The token is returned here once and never again: only its hash is stored. */
  async create (projectId: string, input: { name: string, expiresAt?: string, createdBy: string }): Promise<ServiceToken & { token: string }> {
    const { record, token } = await this.tokens.issue(projectId, input, () => ({ createdBy: input.createdBy }))
    return { ...toServiceToken(record), token }
  }

  /** Every token not revoked, expired ones included so they can be seen and cleaned up. */
  async list (projectId: string): Promise<ServiceToken[]> {
    return (await this.tokens.list(projectId)).map(toServiceToken)
  }

  async revoke (projectId: string, tokenId: string): Promise<void> {
    await this.tokens.revoke(projectId, tokenId)
  }

  /** Null for a malformed, unknown, revoked or expired token; the caller compares `projectId` with the project the request is for. */
  async authenticate (token: string): Promise<ServiceTokenIdentity | null> {
    const record = await this.tokens.authenticate(token)
    return record === null ? null : { projectId: record.projectId, tokenId: record.tokenId }
  }

  /** When a project is deleted; returns how many tokens went with it. */
  async deleteAllForProject (projectId: string): Promise<number> {
    return await this.tokens.deleteAll(projectId)
  }
}
