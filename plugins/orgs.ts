import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import { systemClock } from '../services/platform/clock.js'
import { MemberSets, PERMISSION_GROUPS, TEAMS } from '../services/orgs/member-sets.js'
import { Organizations } from '../services/orgs/organizations.js'
import { PermissionResolver } from '../services/orgs/resolver.js'
import { organizationSchemas } from '../schemas/organizations.js'
import { PURGE_SAFETY_DELAY_MS } from './projects.js'

export interface Orgs {
  organizations: Organizations
  teams: MemberSets
  groups: MemberSets
  resolver: PermissionResolver
}

declare module 'fastify' {
  interface FastifyInstance {
    orgs: Orgs
  }
}

const PURGE_JOB = 'organization.purge'

/** Organizations, their members, teams and permission groups, and the one permission resolver over them. */
async function orgsPlugin (app: FastifyInstance): Promise<void> {
  const { projects } = app
  const unknownProjects = async (orgId: string, ids: string[]): Promise<string[]> => await projects.unknownIn(orgId, ids)
  const teams = new MemberSets(app.store, { clock: systemClock, kind: TEAMS, unknownProjects })
  const groups = new MemberSets(app.store, { clock: systemClock, kind: PERMISSION_GROUPS, unknownProjects })
  const organizations = new Organizations(app.store, {
    clock: systemClock,
    users: app.identity.users,
    teams,
    groups,
    contents: projects,
    schedulePurge: async (orgId) => { await app.jobs.enqueue(PURGE_JOB, { orgId }, { delayMs: PURGE_SAFETY_DELAY_MS }) }
  })
  for (const schema of organizationSchemas) app.addSchema(schema)
  await Promise.all([teams.init(), groups.init(), organizations.init()])
  projects.onDelete(async (projectId) => {
    await organizations.forgetProject(projectId)
    await teams.forgetProject(projectId)
    await groups.forgetProject(projectId)
  })
  app.registerJobHandler(PURGE_JOB, async (payload) => { await organizations.purge(String(payload.orgId)) })
  app.decorate('orgs', { organizations, teams, groups, resolver: new PermissionResolver(app.store, { teams, groups }) })
}

export default fp(orgsPlugin, { name: 'plinth-orgs', fastify: '5.x', dependencies: ['plinth-store', 'plinth-jobs', 'plinth-auth', 'plinth-projects'] })
