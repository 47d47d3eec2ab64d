import { commonErrors } from '../platform/errors.js'
import { isoString } from '../platform/iso-dates.js'
import { retryUpsertRace } from '../platform/upsert-race.js'
import type { Clock } from '../platform/clock.js'
import type { Store, StoreCollection, WithId } from '../store/types.js'
import { GIT_LIMITS, type RepoMemberT, type RepoRoleT } from '../../schemas/git.js'
import { gitErrors } from './errors.js'
import type { Repo } from './repositories.js'

type MemberRecord = {
  repoId: string
  projectId: string
  userId: string
  role: RepoRoleT
  addedBy: string
  createdAt: Date
  updatedAt: Date
}

/** A platform user as the member list shows them. */
export interface MemberUser { id: string, email: string, name: string }

export interface RepoMemberDeps {
  clock: Clock
  /** A platform user by id, or by e-mail address when the reference holds an `@`; null when there is none. */
  findUser: (reference: string) => Promise<MemberUser | null>
  findUsers: (ids: string[]) => Promise<Map<string, MemberUser>>
}

const memberId = (repoId: string, userId: string): string => `${repoId}:${userId}`

function toView (record: WithId<MemberRecord>, user: MemberUser): RepoMemberT {
  return { userId: record.userId, email: user.email, name: user.name, role: record.role, addedBy: record.addedBy, createdAt: isoString(record.createdAt), updatedAt: isoString(record.updatedAt) }
}

/**
 * Members of one repository with a role (`read`, `write`, `admin`), as
 * Gitea's collaborators: any platform user, inside the project's
 * organization or not. A member outside it reaches this repository and
 * nothing else of the project. Roles are read on every request, so a
 * removal ends access at once.
 */
export class RepoMembers {
  private readonly records: StoreCollection<MemberRecord>

  constructor (store: Store, private readonly deps: RepoMemberDeps) {
    this.records = store.collection<MemberRecord>('git_repository_members')
  }

  async init (): Promise<void> {
    await this.records.createIndex({ repoId: 1, userId: 1 })
    await this.records.createIndex({ projectId: 1, userId: 1 })
  }

  /** Members whose user still exists, by e-mail address. */
  async list (repo: Repo): Promise<RepoMemberT[]> {
    const records = await this.records.find({ repoId: repo._id }).toArray()
    const users = await this.deps.findUsers(records.map((record) => record.userId))
    return records.flatMap((record) => {
      const user = users.get(record.userId)
      return user === undefined ? [] : [toView(record, user)]
    }).sort((a, b) => a.email.localeCompare(b.email))
  }

  /** Adds the user named by id or e-mail address, or changes their role. */
  async set (repo: Repo, reference: string, role: RepoRoleT, addedBy: string): Promise<RepoMemberT> {
    const user = await this.deps.findUser(reference)
    if (user === null) throw commonErrors.userNotFound()
    const _id = memberId(repo._id, user.id)
    if (await this.records.findOne({ _id }, { projection: { _id: 1 } }) === null && await this.records.countDocuments({ repoId: repo._id }) >= GIT_LIMITS.membersPerRepo) {
      throw gitErrors.tooManyMembers({ limit: GIT_LIMITS.membersPerRepo })
    }
    const now = this.deps.clock.now()
    const record = await retryUpsertRace(async () => await this.records.findOneAndUpdate(
      { _id },
      { $set: { role, updatedAt: now }, $setOnInsert: { repoId: repo._id, projectId: repo.projectId, userId: user.id, addedBy, createdAt: now } },
      { upsert: true, returnDocument: 'after' }
    ))
    if (record === null) throw new Error('upsert returned no document')
    return toView(record, user)
  }

  async remove (repo: Repo, reference: string): Promise<string> {
    const user = await this.deps.findUser(reference)
    const { deletedCount } = user === null ? { deletedCount: 0 } : await this.records.deleteOne({ _id: memberId(repo._id, user.id) })
    if (user === null || deletedCount === 0) throw gitErrors.memberNotFound()
    return user.id
  }

  async roleOf (repoId: string, userId: string): Promise<RepoRoleT | null> {
    return (await this.records.findOne({ _id: memberId(repoId, userId) }))?.role ?? null
  }

  /** The repositories of a project the user is a member of, with the role in each. */
  async rolesIn (projectId: string, userId: string): Promise<Map<string, RepoRoleT>> {
    const records = await this.records.find({ projectId, userId }, { projection: { repoId: 1, role: 1 } }).toArray()
    return new Map(records.map((record) => [record.repoId, record.role]))
  }

  async deleteForRepo (repo: Repo): Promise<void> {
    await this.records.deleteMany({ repoId: repo._id })
  }
}
