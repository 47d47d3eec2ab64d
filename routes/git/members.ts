import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { GitResponses, MemberBody, MemberParams, RepoParams } from '../../schemas/git.js'
import { platformCaller } from '../../plugins/auth.js'
import { repoOfRequest } from '../../plugins/git.js'

/** Members of a repository with their roles: `git.read` to see them, `git.admin` (in the project or as the repository's admin) to change them. */
const memberRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { members } = app.git
  const tags = ['git']
  const admin = app.requireRepoPermission('git.admin')

  app.get('/members', {
    config: { auth: 'platform' },
    preHandler: app.requireRepoPermission('git.read'),
    schema: { operationId: 'listGitRepositoryMembers', tags, summary: 'The repository\'s members and their roles', description: 'Needs `git.read`. Members of the repository itself; the project\'s members reach it through their project permissions and are not listed.', params: RepoParams, response: GitResponses.members }
  }, async (request) => ({ success: true as const, data: await members.list(repoOfRequest(request).repo) }))

  app.put('/members/:user', {
    config: { auth: 'platform' },
    preHandler: admin,
    schema: { operationId: 'setGitRepositoryMember', tags, summary: 'Add a platform user to the repository, or change their role', description: 'Needs `git.admin`. `:user` is a user id or an e-mail address (404 `APP_USER_NOT_FOUND` when nobody has it). Any platform user may be added: one outside the project\'s organization then reaches this repository only. The role (`read`, `write`, `admin`) adds to what the project gives them; the stronger wins.', params: MemberParams, body: MemberBody, response: GitResponses.member }
  }, async (request) => ({ success: true as const, data: await members.set(repoOfRequest(request).repo, request.params.user, request.body.role, platformCaller(request).userId) }))

  app.delete('/members/:user', {
    config: { auth: 'platform' },
    preHandler: admin,
    schema: { operationId: 'removeGitRepositoryMember', tags, summary: 'Remove a member; their access through the role ends at once', description: 'Needs `git.admin`. `:user` is a user id or an e-mail address. What the project gives them stays.', params: MemberParams, response: GitResponses.memberRemoved }
  }, async (request) => ({ success: true as const, data: { userId: await members.remove(repoOfRequest(request).repo, request.params.user), deleted: true as const } }))
}

export default memberRoutes
