import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { GitResponses, MemberBody, MemberParams, RepoParams } from '../../schemas/git.js'
import { commonErrors } from '../../services/platform/errors.js'
import { gitErrors } from '../../services/git/errors.js'
import { deleted, ok } from '../replies.js'

/**
 * Members of a repository with their roles: `git.read` to see them,
 * `git.admin` (in the project or as the repository's admin) to change them.
 */
const memberRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { members } = app.git
  const tags = ['git']
  app.routeDefaults({ permission: 'git.admin' })

  app.get('/members', {
    config: { permission: 'git.read' },
    schema: {
      operationId: 'listGitRepositoryMembers',
      tags,
      summary: 'The repository\'s members and their roles',
      description: 'Members of the repository itself; ' +
        'the project\'s members reach it through their project permissions and are not listed.',
      params: RepoParams,
      response: GitResponses.members
    }
  }, async (request) => ok(await members.list(request.scope.repository)))

  app.put('/members/:user', {
    config: { errors: [commonErrors.userNotFound, gitErrors.tooManyMembers] },
    schema: {
      operationId: 'setGitRepositoryMember',
      tags,
      summary: 'Add a platform user to the repository, or change their role',
      description: '`:user` is a user id or an e-mail address. ' +
        'Any platform user may be added: one outside the project\'s organization then reaches this repository only. ' +
        'The role (`read`, `write`, `admin`) adds to what the project gives them; the stronger wins.',
      params: MemberParams,
      body: MemberBody,
      response: GitResponses.member
    }
  }, async (request) => ok(await members.set(request.scope.repository, request.params.user, request.body.role, request.caller.user.userId)))

  app.delete('/members/:user', {
    config: { errors: [commonErrors.userNotFound, gitErrors.memberNotFound] },
    schema: {
      operationId: 'removeGitRepositoryMember',
      tags,
      summary: 'Remove a member; their access through the role ends at once',
      description: '`:user` is a user id or an e-mail address. What the project gives them stays.',
      params: MemberParams,
      response: GitResponses.deleted
    }
  }, async (request) => deleted(await members.remove(request.scope.repository, request.params.user)))
}

export default memberRoutes
