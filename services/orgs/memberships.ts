import type { Grant, Role } from './catalogue.js'

/** Keyed `<orgId>:<userId>` so the permission check on every request is one primary-key read. */
export type MembershipRecord = {
  orgId: string
  userId: string
  role: Role
  grants: Grant[]
  createdAt: Date
  updatedAt: Date
}

export function membershipId (orgId: string, userId: string): string {
  return `${orgId}:${userId}`
}
