import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { AddMemberBody, ListQuery, UpdateMemberBody } from '../../schemas/tracker.js'
import { MemberParams, TrackerProjectPath, TrackerResponses } from '../../schemas/tracker-routes.js'
import { trackerErrors as e } from '../../services/tracker/errors.js'
import { created, deleted, ok } from '../replies.js'
import { LIST, WRITE } from './refusals.js'

/** `…/projects/:lpId/members`: who works in a tracker project, and as what. */
const memberRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { members } = app.tracker
  const tags = ['tracker']

  app.get('', {
    config: { permission: 'tracker.read', errors: LIST },
    schema: {
      operationId: 'listTrackerMembers',
      tags,
      summary: 'The project\'s explicit members and their roles',
      description: 'In a public project everyone with `tracker.read` works as a member without being listed here.',
      params: TrackerProjectPath,
      querystring: ListQuery,
      response: TrackerResponses.memberList
    }
  }, async (request) => ok(await members.list(request.scope.trackerProject, request.query)))

  app.post('', {
    config: { permission: 'tracker.admin', errors: [e.notAMember, e.limitReached, e.alreadyMember, ...WRITE] },
    schema: {
      operationId: 'addTrackerMember',
      tags,
      summary: 'Add a member with a role',
      description: 'Only a platform user who holds `tracker.read` in the platform project can become one.',
      params: TrackerProjectPath,
      body: AddMemberBody,
      response: TrackerResponses.memberCreated
    }
  }, async (request, reply) => created(reply, await members.add(request.scope.trackerProject, request.body), { id: request.body.userId }))

  app.patch('/:userId', {
    config: { permission: 'tracker.admin', errors: [e.memberNotFound, ...WRITE] },
    schema: {
      operationId: 'updateTrackerMember',
      tags,
      summary: 'Change a member\'s role',
      params: MemberParams,
      body: UpdateMemberBody,
      response: TrackerResponses.member
    }
  }, async (request) => ok(await members.update(request.scope.trackerProject, request.params.userId, request.body.role)))

  app.delete('/:userId', {
    config: { permission: 'tracker.admin', errors: [e.memberNotFound, ...WRITE] },
    schema: {
      operationId: 'removeTrackerMember',
      tags,
      summary: 'Remove a member',
      description: 'Their assignments stay; they cannot be given new ones.',
      params: MemberParams,
      response: TrackerResponses.deleted
    }
  }, async (request) => {
    await members.remove(request.scope.trackerProject, request.params.userId)
    return deleted(request.params.userId)
  })
}

export default memberRoutes
