import { errorCatalogue, fieldIssue } from '../platform/errors.js'

const LIMIT = ({ limit }: { limit: number }) => ({ limit })
/** A field's refusal in its own words: `message` for the client to read, `why` as `details.fields` names it at `path`. */
interface FieldRefusal { message: string, path: string, why: string }
const FIELD = ({ path, why }: FieldRefusal) => fieldIssue(path, why)

/**
 * Every code the auxiliary family answers with, once. Record webhooks answer
 * the webhook engine's codes (`webhookErrors`); what is the family's own is
 * here. Services throw `auxiliaryErrors.name(params)`, routes list
 * `auxiliaryErrors.name`.
 */
export const auxiliaryErrors = errorCatalogue('auxiliary', {
  // Variables
  variableNotFound: { code: 'APP_AUXILIARY_VARIABLE_NOT_FOUND', status: 404, message: 'Variable not found', description: 'no such variable in the project' },
  variableKeyInvalid: {
    code: 'APP_AUXILIARY_VARIABLE_KEY_INVALID',
    status: 400,
    message: ({ message }: FieldRefusal) => message,
    details: FIELD,
    description: 'the key is not an environment variable name (letters, digits and `_`, not starting with a digit)'
  },
  variableKeyReserved: {
    code: 'APP_AUXILIARY_VARIABLE_KEY_RESERVED',
    status: 400,
    message: ({ message }: FieldRefusal) => message,
    details: FIELD,
    description: 'the key is one the platform sets on every hosted instance (`PORT`, `HOST`, `PLINTH_*`)'
  },
  variableValueTooLong: {
    code: 'APP_AUXILIARY_VARIABLE_VALUE_TOO_LONG',
    status: 400,
    message: ({ limit }: { limit: number }) => `The value is longer than ${limit} bytes`,
    details: ({ limit }) => ({ limit, ...fieldIssue('body.value', `must be at most ${limit} bytes`) }),
    description: 'the value is longer than `details.limit` bytes'
  },
  variableExists: {
    code: 'APP_AUXILIARY_VARIABLE_EXISTS',
    status: 409,
    message: ({ key }: { key: string }) => `The project already has a variable ${key}`,
    details: () => fieldIssue('body.key', 'is taken'),
    description: 'the project has a variable of this key already'
  },
  variablesLimit: {
    code: 'APP_AUXILIARY_VARIABLES_LIMIT',
    status: 409,
    message: ({ limit }: { limit: number }) => `A project holds at most ${limit} variables`,
    details: LIMIT,
    description: 'the project would hold more variables than the limit in `details.limit`'
  },
  variableValueRequired: {
    code: 'APP_AUXILIARY_VARIABLE_VALUE_REQUIRED',
    status: 400,
    message: 'A secret variable made plain needs a new value: its secret one is never shown',
    details: () => fieldIssue('body.value', 'is required to make a secret variable plain'),
    description: '`secret: false` on a secret variable without a new `value`'
  },
  versionMismatch: {
    code: 'APP_AUXILIARY_VERSION_MISMATCH',
    status: 412,
    message: ({ actual }: { expected: number, actual: number }) => `If-Match does not hold: the variable is at version ${actual}`,
    details: ({ expected, actual }) => ({ expected, actual }),
    description: 'If-Match names another version than the one stored; `details.actual` is the stored one'
  },
  // Schedules
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
  },
  scheduleSecretChanged: {
    code: 'APP_SCHEDULE_SECRET_CHANGED',
    status: 409,
    message: 'The schedule\'s secret was rotated by another request meanwhile; nothing was changed by this one',
    description: 'two rotations of one schedule\'s secret at once: the other one won'
  }
})
