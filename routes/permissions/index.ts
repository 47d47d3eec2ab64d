import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { OrganizationResponses } from '../../schemas/organizations.js'
import { PERMISSIONS, ROLE_NAMES, ROLES } from '../../services/orgs/catalogue.js'
import { ok } from '../replies.js'

const catalogue = {
  permissions: Object.entries(PERMISSIONS).map(([name, description]) => ({ name, description })),
  roles: ROLE_NAMES.map((name) => ({ name, description: ROLES[name].description, permissions: [...ROLES[name].permissions] }))
}

/** `GET /api/permissions`: the catalogue grants, teams, groups and PAT scopes draw from, and what each role holds. */
const permissionRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get('', {
    config: { auth: 'platform' },
    schema: {
      operationId: 'getPermissionCatalogue',
      tags: ['organizations'],
      summary: 'Every permission name and what each role holds',
      description: 'The catalogue that grants, teams, groups and personal-access-token scopes draw from, ' +
        'and the permissions each role (owner, admin, member, viewer) holds. Any signed-in platform user may read it.',
      response: OrganizationResponses.catalogue
    }
  }, async () => ok(catalogue))
}

export default permissionRoutes
