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
  }
})
