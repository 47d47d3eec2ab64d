import { commonErrors, type ErrorDefinition } from '../platform/errors.js'
import { orgErrors } from './errors.js'
import { DuplicateKeyError } from '../store/errors.js'
import type { Clock } from '../platform/clock.js'
import type { Store, StoreCollection, WithId } from '../store/types.js'
import type { Grant } from './catalogue.js'
import { checkGrantProjects, checkGrants, type GrantInput, type UnknownProjects } from './grants.js'
import type { OrgAccess, SetGrant, SetGrants } from './resolver.js'
import { membershipId, type MembershipRecord } from './memberships.js'
import { isoString } from '../platform/iso-dates.js'

type MemberSetRecord = {
  orgId: string
  name: string
  slug: string
  description: string
  memberIds: string[]
  grants: Grant[]
  createdAt: Date
  updatedAt: Date
}

export interface MemberSet {
  id: string
  name: string
  slug: string
  description: string
  members: string[]
  permissions: Grant[]
  createdAt: string
  updatedAt: string
}

export interface MemberSetKind {
  /** 'team' or 'permission group', for messages. */
  label: string
  collection: string
  notFound: ErrorDefinition<undefined>
  nameTaken: ErrorDefinition<{ name: string }>
}

export const TEAMS: MemberSetKind = { label: 'team', collection: 'organization_teams', notFound: orgErrors.teamNotFound, nameTaken: orgErrors.teamNameTaken }
export const PERMISSION_GROUPS: MemberSetKind = {
  label: 'permission group',
  collection: 'organization_permission_groups',
  notFound: orgErrors.permissionGroupNotFound,
  nameTaken: orgErrors.permissionGroupNameTaken
}

const MAX_MEMBERS = 1000

function slugFrom (name: string): string {
  // Names without latin letters or digits still need distinct slugs; the name itself stays as given.
  return name.toLowerCase().normalize('NFKD').replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 64) || `set-${Buffer.from(name).toString('hex').slice(0, 40)}`
}

function toMemberSet (record: WithId<MemberSetRecord>): MemberSet {
  return {
    id: record._id,
    name: record.name,
    slug: record.slug,
    description: record.description,
    members: record.memberIds,
    permissions: record.grants,
    createdAt: isoString(record.createdAt),
    updatedAt: isoString(record.updatedAt)
  }
}

/**
 * Teams and permission groups: named sets of members holding grants. They
 * differ in intent (people who work together vs. a bundle of rights), not in
 * mechanics, so one service serves both and the resolver unions both.
 */
export class MemberSets implements SetGrants {
  private readonly sets: StoreCollection<MemberSetRecord>
  private readonly memberships: StoreCollection<MembershipRecord>

  constructor (store: Store, private readonly deps: { clock: Clock, kind: MemberSetKind, unknownProjects: UnknownProjects }) {
    this.sets = store.collection<MemberSetRecord>(deps.kind.collection)
    this.memberships = store.collection<MembershipRecord>('organization_members')
  }

  async init (): Promise<void> {
    await this.sets.createIndex({ orgId: 1, slug: 1 }, { unique: true })
    await this.sets.createIndex({ orgId: 1, memberIds: 1 })
  }

  async list (orgId: string): Promise<MemberSet[]> {
    return (await this.sets.find({ orgId }, { sort: { name: 1, _id: 1 } }).toArray()).map(toMemberSet)
  }

  async get (orgId: string, setId: string): Promise<MemberSet> {
    const set = await this.sets.findOne({ _id: setId, orgId })
    if (set === null) throw this.notFound()
    return toMemberSet(set)
  }

  async create (actor: OrgAccess, input: { name: string, description?: string, permissions?: GrantInput[], members?: string[] }): Promise<MemberSet> {
    const name = this.checkName(input.name)
    const grants = checkGrants(actor, input.permissions ?? [])
    await checkGrantProjects(actor.orgId, grants, this.deps.unknownProjects)
    const memberIds = await this.checkMembers(actor.orgId, input.members ?? [])
    const now = this.deps.clock.now()
    const record = { orgId: actor.orgId, name, slug: slugFrom(name), description: input.description?.trim() ?? '', memberIds, grants, createdAt: now, updatedAt: now }
    try {
      const { insertedId } = await this.sets.insertOne(record)
      return toMemberSet({ ...record, _id: insertedId })
    } catch (error) {
      throw this.nameTaken(error, name)
    }
  }

  /** `set` as the route loaded it (`get`); the write is conditional on it still being there. */
  async update (actor: OrgAccess, set: MemberSet, input: { name?: string, description?: string, permissions?: GrantInput[], members?: string[] }): Promise<MemberSet> {
    const changes: Partial<MemberSetRecord> = { updatedAt: this.deps.clock.now() }
    if (input.name !== undefined) {
      changes.name = this.checkName(input.name)
      changes.slug = slugFrom(changes.name)
    }
    if (input.description !== undefined) changes.description = input.description.trim()
    if (input.permissions !== undefined) {
      changes.grants = checkGrants(actor, input.permissions)
      await checkGrantProjects(actor.orgId, changes.grants, this.deps.unknownProjects)
    }
    if (input.members !== undefined) {
      changes.memberIds = await this.checkMembers(actor.orgId, input.members)
      checkGrants(actor, changes.grants ?? set.permissions)
    }
    try {
      const updated = await this.sets.findOneAndUpdate({ _id: set.id, orgId: actor.orgId }, { $set: changes }, { returnDocument: 'after' })
      if (updated === null) throw this.notFound()
      return toMemberSet(updated)
    } catch (error) {
      throw this.nameTaken(error, changes.name ?? '')
    }
  }

  async delete (orgId: string, set: MemberSet): Promise<void> {
    const removed = await this.sets.deleteOne({ _id: set.id, orgId })
    if (removed.deletedCount === 0) throw this.notFound()
  }

  async addMember (actor: OrgAccess, set: MemberSet, userId: string): Promise<MemberSet> {
    const orgId = actor.orgId
    await this.checkMembers(orgId, [userId])
    // Joining a set hands out its grants, so only someone holding them all may add members.
    checkGrants(actor, set.permissions)
    if (!set.members.includes(userId) && set.members.length >= MAX_MEMBERS) throw orgErrors.tooManyMembers({ set: this.deps.kind.label, limit: MAX_MEMBERS })
    const updated = await this.sets.findOneAndUpdate({ _id: set.id, orgId }, { $addToSet: { memberIds: userId }, $set: { updatedAt: this.deps.clock.now() } }, { returnDocument: 'after' })
    if (updated === null) throw this.notFound()
    return toMemberSet(updated)
  }

  async removeMember (orgId: string, set: MemberSet, userId: string): Promise<MemberSet> {
    if (!set.members.includes(userId)) throw orgErrors.memberNotFound({ set: this.deps.kind.label })
    const updated = await this.sets.findOneAndUpdate({ _id: set.id, orgId }, { $pull: { memberIds: userId }, $set: { updatedAt: this.deps.clock.now() } }, { returnDocument: 'after' })
    if (updated === null) throw this.notFound()
    return toMemberSet(updated)
  }

  /** The grants a member holds through the sets they belong to. */
  async grantsFor (orgId: string, userId: string): Promise<SetGrant[]> {
    const sets = await this.sets.find({ orgId, memberIds: userId }, { projection: { name: 1, grants: 1 } }).toArray()
    return sets.flatMap((set) => set.grants.map((grant) => ({ grant, setId: set._id, setName: set.name })))
  }

  async forgetProject (projectId: string): Promise<void> {
    await this.sets.updateMany({ 'grants.projectId': projectId }, { $pull: { grants: { projectId } } })
  }

  async removeMemberEverywhere (orgId: string, userId: string): Promise<void> {
    await this.sets.updateMany({ orgId, memberIds: userId }, { $pull: { memberIds: userId } })
  }

  async deleteAllInOrganization (orgId: string): Promise<void> {
    await this.sets.deleteMany({ orgId })
  }

  private checkName (raw: string): string {
    const name = raw.trim()
    if (name.length === 0) throw commonErrors.invalidName()
    return name
  }

  /** Only members of the organization can be put in its teams and groups. */
  private async checkMembers (orgId: string, userIds: string[]): Promise<string[]> {
    const unique = [...new Set(userIds)]
    if (unique.length > MAX_MEMBERS) throw orgErrors.tooManyMembers({ set: this.deps.kind.label, limit: MAX_MEMBERS })
    if (unique.length === 0) return unique
    const found = await this.memberships.find({ _id: { $in: unique.map((id) => membershipId(orgId, id)) } }, { projection: { userId: 1 } }).toArray()
    const known = new Set(found.map((m) => m.userId))
    const missing = unique.filter((id) => !known.has(id))
    if (missing.length > 0) throw orgErrors.notAMember({ ids: missing })
    return unique
  }

  private notFound (): Error {
    return this.deps.kind.notFound()
  }

  private nameTaken (error: unknown, name: string): unknown {
    if (error instanceof DuplicateKeyError) return this.deps.kind.nameTaken({ name })
    return error
  }
}
