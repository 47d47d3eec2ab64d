import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import {
  CreateScheduleBody, ScheduleListParams, ScheduleListQuery, ScheduleParams, ScheduleResponses, ScheduleRunParams, UpdateScheduleBody
} from '../../schemas/auxiliary-schedules.js'
import { auxiliaryErrors as e } from '../../services/auxiliary/errors.js'
import type { ScheduleInput, SchedulePatch } from '../../services/auxiliary/schedules.js'
import { RotateSecretBody, WEBHOOK_LIMITS } from '../../schemas/webhooks.js'
import { created, deleted, ok } from '../replies.js'

/**
 * `/auxiliary/schedules`: cron or interval schedules that call a URL or run a
 * collection operation, their run history and run now (docs/auxiliary.md,
 * "Schedules"). Reads need `auxiliary.read`, changes and runs `auxiliary.manage`.
 */
const scheduleRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { schedules, scheduleRuns } = app.auxiliary
  const tags = ['auxiliary']
  const invalid = [e.scheduleInvalid, e.scheduleUrlForbidden, e.schedulePermissionExceeded]

  app.get('/', {
    config: { permission: 'auxiliary.read' },
    schema: {
      operationId: 'listSchedules',
      tags,
      summary: 'The project\'s schedules, oldest first',
      params: ScheduleListParams,
      querystring: ScheduleListQuery,
      response: ScheduleResponses.list
    }
  }, async (request) => {
    const page = await schedules.list(request.scope.project.id, request.query)
    return ok({ items: page.items.map((record) => schedules.view(record)), nextCursor: page.nextCursor })
  })

  app.post('/', {
    config: { permission: 'auxiliary.manage', errors: [...invalid, e.scheduleLimitReached] },
    schema: {
      operationId: 'createSchedule',
      tags,
      summary: 'Create a schedule',
      description: 'Answers the schedule with its next five fire times, and its signing secret this once. ' +
        'Its permissions may not exceed the caller\'s; it acts as the caller, re-checked on every run.',
      params: ScheduleListParams,
      body: CreateScheduleBody,
      response: ScheduleResponses.created
    }
  }, async (request, reply) => {
    const caller = { userId: request.caller.user.userId, held: request.scope.permissions }
    const { record, secret } = await schedules.create(request.scope.project.id, caller, request.body as ScheduleInput)
    return created(reply, { schedule: schedules.view(record), secret }, { id: record._id })
  })

  app.get('/:scheduleId', {
    config: { parent: 'schedule', permission: 'auxiliary.read' },
    schema: {
      operationId: 'getSchedule',
      tags,
      summary: 'One schedule, with its next five fire times',
      params: ScheduleParams,
      response: ScheduleResponses.schedule
    }
  }, async (request) => ok(schedules.view(request.scope.schedule)))

  app.patch('/:scheduleId', {
    config: { parent: 'schedule', permission: 'auxiliary.manage', errors: invalid },
    schema: {
      operationId: 'updateSchedule',
      tags,
      summary: 'Change a schedule',
      description: 'A new trigger, or enabling, counts from now. ' +
        'A new action or permissions makes the caller the user the schedule acts as.',
      params: ScheduleParams,
      body: UpdateScheduleBody,
      response: ScheduleResponses.schedule
    }
  }, async (request) => {
    const caller = { userId: request.caller.user.userId, held: request.scope.permissions }
    return ok(schedules.view(await schedules.update(request.scope.schedule, caller, request.body as SchedulePatch)))
  })

  app.delete('/:scheduleId', {
    config: { parent: 'schedule', permission: 'auxiliary.manage' },
    schema: {
      operationId: 'deleteSchedule',
      tags,
      summary: 'Delete a schedule and its run history',
      params: ScheduleParams,
      response: ScheduleResponses.deleted
    }
  }, async (request) => {
    const schedule = request.scope.schedule
    await schedules.delete(schedule)
    await scheduleRuns.purgeSchedule(schedule._id)
    return deleted(schedule._id)
  })

  app.post('/:scheduleId/rotate-secret', {
    config: { parent: 'schedule', permission: 'auxiliary.manage', errors: [e.scheduleSecretChanged] },
    schema: {
      operationId: 'rotateScheduleSecret',
      tags,
      summary: 'A new signing secret, shown once; the previous one keeps signing for the grace',
      description: 'During the grace every HTTP call carries a `v1=` signature for each secret, so the receiver verifies with either.',
      params: ScheduleParams,
      body: RotateSecretBody,
      response: ScheduleResponses.rotated
    }
  }, async (request) => {
    const grace = request.body.previousExpiresInSeconds ?? WEBHOOK_LIMITS.previousSecretDefaultSeconds
    const { record, secret } = await schedules.rotateSecret(request.scope.schedule, grace)
    return ok({ schedule: schedules.view(record), secret })
  })

  app.post('/:scheduleId/runs', {
    config: { parent: 'schedule', permission: 'auxiliary.manage' },
    schema: {
      operationId: 'runSchedule',
      tags,
      summary: 'Run the schedule\'s action now',
      description: 'Runs at once, whether or not the schedule is enabled, and answers the finished run; ' +
        'a run already going makes it `skipped`.',
      params: ScheduleParams,
      response: ScheduleResponses.ran
    }
  }, async (request, reply) => {
    const run = await scheduleRuns.runNow(request.scope.schedule)
    return created(reply, scheduleRuns.view(run), { id: run._id })
  })

  app.get('/:scheduleId/runs', {
    config: { parent: 'schedule', permission: 'auxiliary.read' },
    schema: {
      operationId: 'listScheduleRuns',
      tags,
      summary: 'The schedule\'s runs, newest first',
      params: ScheduleParams,
      querystring: ScheduleListQuery,
      response: ScheduleResponses.runList
    }
  }, async (request) => {
    const page = await scheduleRuns.list(request.scope.schedule._id, request.query)
    return ok({ items: page.items.map((run) => scheduleRuns.view(run)), nextCursor: page.nextCursor })
  })

  app.get('/:scheduleId/runs/:runId', {
    config: { parent: 'scheduleRun', permission: 'auxiliary.read' },
    schema: { operationId: 'getScheduleRun', tags, summary: 'One run', params: ScheduleRunParams, response: ScheduleResponses.run }
  }, async (request) => ok(scheduleRuns.view(request.scope.scheduleRun)))
}

export default scheduleRoutes
