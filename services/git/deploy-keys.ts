import { DuplicateKeyError } from '../store/errors.js'
import { issueToken, tokenView, usableToken, type StoredToken } from '../identity/pat-format.js'
import { parseSshPublicKey } from '../identity/ssh-key-format.js'
import type { Clock } from '../platform/clock.js'
import type { IdGenerator } from '../platform/ids.js'
import type { Store, StoreCollection, WithId } from '../store/types.js'
import { GIT_LIMITS, type DeployKeyT } from '../../schemas/git.js'
import { gitErrors } from './errors.js'
import type { Repo } from './repositories.js'

/**
 * A deploy key is one repository's machine credential: an SSH public key and,
 * for git over HTTP, a token in the PAT format (its own prefix, stored as a
 * hash as the Store key, shown once). Read-only keys fetch; write keys push
 * too, under the same protected-branch rules as a member with `git.write`.
 */
type DeployKeyRecord = StoredToken & {
  keyId: string
  projectId: string
  repoId: string
  canonical: string
  fingerprint: string
  readOnly: boolean
  createdBy: string
}

/** What a deploy key's token authenticates: one repository, read-only or not. */
export interface DeployKeyIdentity { keyId: string, projectId: string, repoId: string, readOnly: boolean }

export const DEPLOY_TOKEN_PREFIX = 'plinthdk'
const COLLECTION = 'git_deploy_keys'

function toView (record: WithId<DeployKeyRecord>): DeployKeyT {
  const token = tokenView(record)
  return {
    id: record.keyId,
    title: token.name,
    key: record.canonical,
    fingerprint: record.fingerprint,
    readOnly: record.readOnly,
    tokenHint: token.hint,
    createdBy: record.createdBy,
    createdAt: token.createdAt,
    lastUsedAt: token.lastUsedAt
  }
}

export class DeployKeys {
  private readonly keys: StoreCollection<DeployKeyRecord>

  /** `userKeyOwner`: whose registered SSH key a key is, so one key never stands for both a user and a deploy key. */
  constructor (private readonly store: Store, private readonly deps: { clock: Clock, newId: IdGenerator, userKeyOwner: (fingerprint: string) => Promise<string | null> }) {
    this.keys = store.collection<DeployKeyRecord>(COLLECTION)
  }

  async init (): Promise<void> {
    await this.keys.createIndex({ keyId: 1 }, { unique: true })
    await this.keys.createIndex({ fingerprint: 1 }, { unique: true })
    await this.keys.createIndex({ repoId: 1 })
  }

  /** The token is in this answer only. */
  async create (repo: Repo, createdBy: string, input: { title: string, key: string, readOnly?: boolean }): Promise<DeployKeyT & { token: string }> {
    const parsed = parseSshPublicKey(input.key)
    if (await this.deps.userKeyOwner(parsed.fingerprint) !== null) throw gitErrors.deployKeyExists({ fingerprint: parsed.fingerprint })
    if (await this.keys.countDocuments({ repoId: repo._id }) >= GIT_LIMITS.deployKeysPerRepo) {
      throw gitErrors.tooManyDeployKeys({ limit: GIT_LIMITS.deployKeysPerRepo })
    }
    const { token, stored } = issueToken(DEPLOY_TOKEN_PREFIX, { name: input.title }, this.deps.clock.now())
    const record = {
      ...stored,
      keyId: this.deps.newId(),
      projectId: repo.projectId,
      repoId: repo._id,
      canonical: parsed.canonical,
      fingerprint: parsed.fingerprint,
      readOnly: input.readOnly ?? true,
      createdBy
    }
    try {
      await this.keys.insertOne(record)
    } catch (error) {
      if (error instanceof DuplicateKeyError) throw gitErrors.deployKeyExists({ fingerprint: parsed.fingerprint })
      throw error
    }
    return { ...toView(record), token }
  }

  async list (repo: Repo): Promise<DeployKeyT[]> {
    return (await this.keys.find({ repoId: repo._id }, { sort: { keyId: 1 } }).toArray()).map(toView)
  }

  /** Removed outright, so the same SSH key can be added again later. */
  async delete (repo: Repo, keyId: string): Promise<void> {
    const { deletedCount } = await this.keys.deleteOne({ keyId, repoId: repo._id })
    if (deletedCount === 0) throw gitErrors.deployKeyNotFound()
  }

  async deleteForRepo (repo: Repo): Promise<void> {
    await this.keys.deleteMany({ repoId: repo._id })
  }

  /** The deploy key with this SSH key, for git over SSH; null when there is none. */
  async byFingerprint (fingerprint: string): Promise<DeployKeyIdentity | null> {
    const record = await this.keys.findOne({ fingerprint })
    return record === null ? null : { keyId: record.keyId, projectId: record.projectId, repoId: record.repoId, readOnly: record.readOnly }
  }

  /** Null for a malformed or unknown token. */
  async authenticate (token: string): Promise<DeployKeyIdentity | null> {
    const record = await usableToken<DeployKeyRecord>(this.store, COLLECTION, token, DEPLOY_TOKEN_PREFIX, this.deps.clock)
    return record === null ? null : { keyId: record.keyId, projectId: record.projectId, repoId: record.repoId, readOnly: record.readOnly }
  }
}
