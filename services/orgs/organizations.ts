import { commonErrors } from '../platform/errors.js'
import { orgErrors } from './errors.js'
import { checkName, checkSlug, namedChanges, slugFrom, withSuffix } from '../platform/slugs.js'
import { DuplicateKeyError } from '../store/errors.js'
import type { Clock } from '../platform/clock.js'
import type { PagedWrites, Store, StoreCollection, WithId } from '../store/types.js'
import { isRole, type Grant, type Role } from './catalogue.js'
import { checkGrantProjects, checkGrants, checkRoleCeiling, type GrantInput, type UnknownProjects } from './grants.js'
import type { Caller, OrgAccess } from './resolver.js'
import { membershipId, type MembershipRecord } from './memberships.js'
import type { PlatformUsers } from '../identity/users.js'
import type { MemberSets } from './member-sets.js'
import type { OrganizationT } from '../../schemas/organizations.ts'
import { isoString } from '../platform/iso-dates.js'

type OrganizationRecord = {
  name: string
  slug: string
  description: string
  createdBy: string
  /** Kept on the organization so "never remove the last owner" is one conditional update, safe under races. */
  ownerCount: number
  createdAt: Date
  updatedAt: Date
  deletedAt: Date | null
}

export type Organization = OrganizationT

export interface Member {
  id: string
  email: string
  name: string
  role: Role
  /** Direct grants, beside what the role gives. */
  permissions: Grant[]
  joinedAt: string
}

/** What deleting an organization must also remove; the projects service provides it. */
export interface OrganizationContents {
  deleteAllInOrganization (orgId: string): Promise<void>
  unknownIn: UnknownProjects
}

function toOrganization (record: WithId<OrganizationRecord>): Organization {
  return {
    id: record._id,
    name: record.name,
    slug: record.slug,
    description: record.description,
    createdBy: record.createdBy,
    createdAt: isoString(record.createdAt),
    updatedAt: isoString(record.updatedAt)
  }
}

export class Organizations {
  readonly records: StoreCollection<OrganizationRecord>
  private readonly memberships: StoreCollection<MembershipRecord>
  /** An organization's members, or those holding grants on a project, may be any number: changed a page at a time. */
  private readonly membershipSweep: PagedWrites
  private readonly purgeHooks: Array<(orgId: string) => Promise<void>> = []

  constructor (store: Store, private readonly deps: { clock: Clock, users: PlatformUsers, teams: MemberSets, groups: MemberSets, contents: OrganizationContents, schedulePurge: (orgId: string) => Promise<void> }) {
    this.records = store.collection<OrganizationRecord>('organizations')
    this.memberships = store.collection<MembershipRecord>('organization_members')
    this.membershipSweep = store.extensions.sweep('organization_members')
  }

  async init (): Promise<void> {
    await this.records.createIndex({ slug: 1 }, { unique: true })
    await this.memberships.createIndex({ userId: 1 })
    await this.memberships.createIndex({ orgId: 1 })
  }

  async listForUser (userId: string): Promise<Array<Organization & { role: Role }>> {
    const memberships = await this.memberships.find({ userId }).toArray()
    if (memberships.length === 0) return []
    const roles = new Map(memberships.map((m) => [m.orgId, m.role]))
    const records = await this.records.find({ _id: { $in: [...roles.keys()] }, deletedAt: null }, { sort: { name: 1, _id: 1 } }).toArray()
    return records.map((record) => ({ ...toOrganization(record), role: roles.get(record._id) as Role }))
  }

  async create (creator: Caller, input: { name: string, slug?: string, description?: string }): Promise<Organization> {
    // An organization is created with every permission; a token narrowed by scopes must not mint that.
    if (creator.scopes !== undefined && creator.scopes.length > 0) throw orgErrors.scopedToken()
    const userId = creator.userId
    const name = checkName(input.name)
    if (input.slug !== undefined) checkSlug(input.slug)
    const now = this.deps.clock.now()
    let insertedId: string | null = null
    let record: OrganizationRecord | null = null
    // A slug derived from the name gets a random suffix when it is empty or taken; one the caller chose is refused instead.
    for (let attempt = 0; insertedId === null; attempt++) {
      const slug = input.slug ?? withSuffix(slugFrom(name), attempt, 'org')
      record = { name, slug, description: input.description?.trim() ?? '', createdBy: userId, ownerCount: 1, createdAt: now, updatedAt: now, deletedAt: null }
      try {
        ({ insertedId } = await this.records.insertOne(record))
      } catch (error) {
        if (!(error instanceof DuplicateKeyError)) throw error
        if (input.slug !== undefined || attempt >= 4) throw commonErrors.slugTaken({ what: 'An organization', slug })
      }
    }
    await this.memberships.insertOne({ _id: membershipId(insertedId, userId), orgId: insertedId, userId, role: 'owner', grants: [], createdAt: now, updatedAt: now })
    return toOrganization({ ...(record as OrganizationRecord), _id: insertedId })
  }

  async get (orgId: string): Promise<Organization> {
    const record = await this.records.findOne({ _id: orgId, deletedAt: null })
    if (record === null) throw commonErrors.organizationNotFound()
    return toOrganization(record)
  }

  async update (orgId: string, input: { name?: string, slug?: string, description?: string }): Promise<Organization> {
    const changes: Partial<OrganizationRecord> = { ...namedChanges(input), updatedAt: this.deps.clock.now() }
    try {
      const updated = await this.records.findOneAndUpdate({ _id: orgId, deletedAt: null }, { $set: changes }, { returnDocument: 'after' })
      if (updated === null) throw commonErrors.organizationNotFound()
      return toOrganization(updated)
    } catch (error) {
      if (error instanceof DuplicateKeyError) throw commonErrors.slugTaken({ what: 'An organization', slug: input.slug ?? '' })
      throw error
    }
  }

  /**
   * Marked first so it vanishes at once; then access ends (memberships), then
   * what it owns goes. Each step is idempotent and a purge job is queued
   * before anything is touched, so a crash mid-way is finished by any node.
   */
  async delete (orgId: string): Promise<void> {
    await this.deps.schedulePurge(orgId)
    const marked = await this.records.updateOne({ _id: orgId, deletedAt: null }, { $set: { deletedAt: this.deps.clock.now() } })
    if (marked.matchedCount === 0) throw commonErrors.organizationNotFound()
    await this.purge(orgId)
  }

  /** Idempotent; sweeps by organization even when its record is already gone, catching writes that raced the deletion. */
  async purge (orgId: string): Promise<void> {
    const record = await this.records.findOne({ _id: orgId })
    if (record !== null && record.deletedAt === null) return
    await this.membershipSweep.deleteMany({ orgId })
    await this.deps.teams.deleteAllInOrganization(orgId)
    await this.deps.groups.deleteAllInOrganization(orgId)
    await this.deps.contents.deleteAllInOrganization(orgId)
    for (const hook of this.purgeHooks) await hook(orgId)
    await this.records.deleteOne({ _id: orgId })
  }

  /** What other families keep per organization goes with it: each hook is idempotent, and runs again if a purge is finished after a crash. */
  onPurge (hook: (orgId: string) => Promise<void>): void {
    this.purgeHooks.push(hook)
  }

  /** Grants scoped to a deleted project go with it. */
  async forgetProject (projectId: string): Promise<void> {
    await this.membershipSweep.updateMany({ 'grants.projectId': projectId }, { $pull: { grants: { projectId } } })
  }

  async listMembers (orgId: string): Promise<Member[]> {
    const memberships = await this.memberships.find({ orgId }, { sort: { createdAt: 1, _id: 1 } }).toArray()
    return await this.withProfiles(memberships)
  }

  async getMember (orgId: string, userId: string): Promise<Member> {
    const membership = await this.memberships.findOne({ _id: membershipId(orgId, userId) })
    if (membership === null) throw orgErrors.memberNotFound()
    const [member] = await this.withProfiles([membership])
    return member
  }

  async addMember (actor: OrgAccess, input: { email?: string, userId?: string, role: string, permissions?: GrantInput[] }): Promise<Member> {
    const role = this.checkRoleChange(actor, null, input.role)
    const grants = checkGrants(actor, input.permissions ?? [])
    await checkGrantProjects(actor.orgId, grants, async (orgId, ids) => await this.deps.contents.unknownIn(orgId, ids))
    if ((input.email === undefined) === (input.userId === undefined)) throw orgErrors.invalidMember()
    const user = input.userId !== undefined ? await this.deps.users.findById(input.userId) : await this.deps.users.findByEmail(input.email as string)
    if (user === null) throw commonErrors.userNotFound()
    const now = this.deps.clock.now()
    if (role === 'owner') await this.records.updateOne({ _id: actor.orgId }, { $inc: { ownerCount: 1 } })
    try {
      await this.memberships.insertOne({ _id: membershipId(actor.orgId, user.id), orgId: actor.orgId, userId: user.id, role, grants, createdAt: now, updatedAt: now })
    } catch (error) {
      if (role === 'owner') await this.records.updateOne({ _id: actor.orgId }, { $inc: { ownerCount: -1 } })
      if (error instanceof DuplicateKeyError) throw orgErrors.alreadyMember()
      throw error
    }
    return await this.getMember(actor.orgId, user.id)
  }

  async changeRole (actor: OrgAccess, userId: string, roleName: string): Promise<Member> {
    const current = await this.requireMembership(actor.orgId, userId)
    const role = this.checkRoleChange(actor, current.role, roleName)
    if (role === current.role) return await this.getMember(actor.orgId, userId)
    if (current.role === 'owner') await this.releaseOwner(actor.orgId)
    if (role === 'owner') await this.records.updateOne({ _id: actor.orgId }, { $inc: { ownerCount: 1 } })
    const changed = await this.memberships.updateOne({ _id: current._id, role: current.role }, { $set: { role, updatedAt: this.deps.clock.now() } })
    if (changed.matchedCount === 0) {
      // Someone else changed this member meanwhile: undo the count and let the caller retry on fresh state.
      await this.records.updateOne({ _id: actor.orgId }, { $inc: { ownerCount: (current.role === 'owner' ? 1 : 0) - (role === 'owner' ? 1 : 0) } })
      throw orgErrors.memberChanged()
    }
    return await this.getMember(actor.orgId, userId)
  }

  async removeMember (actor: OrgAccess, userId: string): Promise<void> {
    const current = await this.requireMembership(actor.orgId, userId)
    if (userId !== actor.userId) checkRoleCeiling(actor, current.role, 'remove a member of')
    if (current.role === 'owner') await this.releaseOwner(actor.orgId)
    const removed = await this.memberships.deleteOne({ _id: current._id, role: current.role })
    if (removed.deletedCount === 0) {
      if (current.role === 'owner') await this.records.updateOne({ _id: actor.orgId }, { $inc: { ownerCount: 1 } })
      throw orgErrors.memberChanged()
    }
    await this.deps.teams.removeMemberEverywhere(actor.orgId, userId)
    await this.deps.groups.removeMemberEverywhere(actor.orgId, userId)
  }

  async getGrants (orgId: string, userId: string): Promise<Grant[]> {
    return (await this.requireMembership(orgId, userId)).grants
  }

  async setGrants (actor: OrgAccess, userId: string, grants: GrantInput[]): Promise<Grant[]> {
    const checked = checkGrants(actor, grants)
    checkRoleCeiling(actor, (await this.requireMembership(actor.orgId, userId)).role, 'change the grants of a member with')
    await checkGrantProjects(actor.orgId, checked, async (orgId, ids) => await this.deps.contents.unknownIn(orgId, ids))
    const updated = await this.memberships.findOneAndUpdate({ _id: membershipId(actor.orgId, userId) }, { $set: { grants: checked, updatedAt: this.deps.clock.now() } }, { returnDocument: 'after' })
    if (updated === null) throw orgErrors.memberNotFound()
    return updated.grants
  }

  /** Nobody gives, changes or takes away a role holding more than they hold themselves (so only full owners touch owners). */
  private checkRoleChange (actor: OrgAccess, from: Role | null, to: string): Role {
    if (!isRole(to)) throw orgErrors.invalidRole({ role: to })
    checkRoleCeiling(actor, to, 'grant')
    if (from !== null) checkRoleCeiling(actor, from, 'change')
    return to
  }

  private async releaseOwner (orgId: string): Promise<void> {
    const released = await this.records.updateOne({ _id: orgId, ownerCount: { $gt: 1 } }, { $inc: { ownerCount: -1 } })
    if (released.matchedCount === 0) throw orgErrors.lastOwner()
  }

  private async requireMembership (orgId: string, userId: string): Promise<WithId<MembershipRecord>> {
    const membership = await this.memberships.findOne({ _id: membershipId(orgId, userId) })
    if (membership === null) throw orgErrors.memberNotFound()
    return membership
  }

  private async withProfiles (memberships: Array<WithId<MembershipRecord>>): Promise<Member[]> {
    const users = await this.deps.users.findMany(memberships.map((m) => m.userId))
    return memberships.map((m) => {
      const user = users.get(m.userId)
      return { id: m.userId, email: user?.email ?? '', name: user?.name ?? '', role: m.role, permissions: m.grants, joinedAt: isoString(m.createdAt) }
    })
  }
}
