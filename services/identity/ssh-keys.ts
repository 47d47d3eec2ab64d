import { identityErrors } from './errors.js'
import { DuplicateKeyError } from '../store/errors.js'
import { parseSshPublicKey, type SshKeyAlgorithm } from './ssh-key-format.js'
import type { Clock } from '../platform/clock.js'
import type { Store, StoreCollection, WithId } from '../store/types.js'
import type { SshKeyT } from '../../schemas/auth.ts'
import { isoString, isoStringOrNull } from '../platform/iso-dates.js'

type SshKeyRecord = {
  userId: string
  title: string
  /** `type base64` without the comment: one key can be registered once across all users, as git hosts require. */
  canonical: string
  type: string
  algorithm: SshKeyAlgorithm
  bits: number
  fingerprint: string
  createdAt: Date
  lastUsedAt: Date | null
}

export type SshKey = SshKeyT

function toSshKey (record: WithId<SshKeyRecord>): SshKey {
  return {
    id: record._id,
    title: record.title,
    key: record.canonical,
    type: record.type,
    bits: record.bits,
    fingerprint: record.fingerprint,
    createdAt: isoString(record.createdAt),
    lastUsedAt: isoStringOrNull(record.lastUsedAt)
  }
}

export class SshKeys {
  readonly records: StoreCollection<SshKeyRecord>
  // Other families that sign in by SSH key (git's deploy keys): a key one of them holds cannot also be a user's.
  private readonly heldElsewhere: Array<(fingerprint: string) => Promise<boolean>> = []

  constructor (store: Store, private readonly clock: Clock) {
    this.records = store.collection<SshKeyRecord>('platform_ssh_keys')
  }

  async init (): Promise<void> {
    await this.records.createIndex({ fingerprint: 1 }, { unique: true })
    await this.records.createIndex({ userId: 1 })
  }

  /** A check, run before a user's key is added, that the key is not one the caller of `check` already holds. */
  onAdd (heldElsewhere: (fingerprint: string) => Promise<boolean>): void {
    this.heldElsewhere.push(heldElsewhere)
  }

  async add (userId: string, input: { title: string, key: string }): Promise<SshKey> {
    const parsed = parseSshPublicKey(input.key)
    for (const held of this.heldElsewhere) {
      if (await held(parsed.fingerprint)) throw identityErrors.sshKeyExists({ fingerprint: parsed.fingerprint })
    }
    const record: SshKeyRecord = {
      userId,
      title: input.title.trim() || (parsed.comment ?? parsed.type),
      canonical: parsed.canonical,
      type: parsed.type,
      algorithm: parsed.algorithm,
      bits: parsed.bits,
      fingerprint: parsed.fingerprint,
      createdAt: this.clock.now(),
      lastUsedAt: null
    }
    try {
      const { insertedId } = await this.records.insertOne(record)
      return toSshKey({ ...record, _id: insertedId })
    } catch (error) {
      if (error instanceof DuplicateKeyError) throw identityErrors.sshKeyExists({ fingerprint: parsed.fingerprint })
      throw error
    }
  }

  async list (userId: string): Promise<SshKey[]> {
    return (await this.records.find({ userId }, { sort: { _id: 1 } }).toArray()).map(toSshKey)
  }

  async remove (userId: string, keyId: string): Promise<void> {
    const result = await this.records.deleteOne({ _id: keyId, userId })
    if (result.deletedCount === 0) throw identityErrors.sshKeyNotFound()
  }

  /** Whose key this is (git over SSH signs in with it), or null. */
  async ownerOf (fingerprint: string): Promise<string | null> {
    return (await this.records.findOne({ fingerprint }))?.userId ?? null
  }

  /** Every key of a user (an account taken over by its verified owner keeps none of the squatter's). */
  async removeAll (userId: string): Promise<void> {
    await this.records.deleteMany({ userId })
  }
}
