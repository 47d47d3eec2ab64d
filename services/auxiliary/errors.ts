import { errorCatalogue, fieldIssue } from '../errors.js'

/**
 * The auxiliary area's own codes (record webhooks answer the webhook
 * engine's, `webhookErrors`): services throw `auxiliaryErrors.name(params)`,
 * routes list `auxiliaryErrors.name`.
 */
export const auxiliaryErrors = errorCatalogue('auxiliary', {
  scheduleInvalid: {
    code: 'APP_SCHEDULE_INVALID',
    status: 400,
    message: ({ path, why }: { path: string, why: string }) => `${path} ${why}`,
    details: ({ path, why }) => fieldIssue(path, why),
    description: 'a schedule\'s cron expression, timezone, interval, action or permissions is not usable; `details.fields` names the field'
  },
  scheduleUrlForbidden: {
    code: 'APP_SCHEDULE_URL_FORBIDDEN',
    status: 400,
    message: ({ kind }: { kind: string, path: string }) => `The schedule's URL reaches ${/^[aeiou]/.test(kind) ? 'an' : 'a'} ${kind} address, which this server does not call; the operator may allow the host with WEBHOOK_ALLOWED_HOSTS`,
    details: ({ path, kind }) => fieldIssue(path, `reaches ${/^[aeiou]/.test(kind) ? 'an' : 'a'} ${kind} address`),
    description: 'the HTTP action\'s host resolves to a loopback, private, link-local or other internal address the operator has not allowed'
  },
  schedulePermissionExceeded: {
    code: 'APP_SCHEDULE_PERMISSION_EXCEEDED',
    status: 403,
    message: ({ permission }: { permission: string }) => `A schedule cannot be given ${permission}: you do not hold it in this project`,
    details: ({ permission }) => fieldIssue('body.permissions', `${permission} is not held by the caller`),
    description: 'a schedule was to be given a permission its creator does not hold'
  },
  scheduleNotFound: { code: 'APP_SCHEDULE_NOT_FOUND', status: 404, message: 'Schedule not found', description: 'no such schedule in the project' },
  scheduleRunNotFound: { code: 'APP_SCHEDULE_RUN_NOT_FOUND', status: 404, message: 'Run not found', description: 'no such run of the schedule' },
  scheduleLimitReached: {
    code: 'APP_SCHEDULE_LIMIT_REACHED',
    status: 409,
    message: ({ limit }: { limit: number }) => `A project holds at most ${limit} schedules`,
    details: ({ limit }) => ({ limit }),
    description: 'the project already has as many schedules as it may'
  }
})
