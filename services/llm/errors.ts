import { errorCatalogue, fieldIssue } from '../platform/errors.js'

/** Every code the LLM family answers with, once: services throw `llmErrors.name(params)`, routes list `llmErrors.name`. */
export const llmErrors = errorCatalogue('llm', {
  credentialInvalid: {
    code: 'APP_LLM_CREDENTIAL_INVALID',
    status: 400,
    message: ({ problem }: { problem: string, path: string, issue: string }) => problem,
    details: ({ path, issue }) => fieldIssue(path, issue),
    description: 'the credential lacks what its provider needs (a key, a base URL) or its base URL is not an http(s) URL without credentials'
  },
  baseUrlForbidden: {
    code: 'APP_LLM_BASE_URL_FORBIDDEN',
    status: 400,
    message: ({ kind }: { kind: string }) => `The base URL's host reaches ${/^[aeiou]/.test(kind) ? 'an' : 'a'} ${kind} address, which this server does not call; the operator may allow the host with LLM_ALLOWED_HOSTS`,
    details: ({ kind }) => fieldIssue('body.baseUrl', `reaches ${/^[aeiou]/.test(kind) ? 'an' : 'a'} ${kind} address`),
    description: 'the base URL\'s host resolves to a loopback, private, link-local or other internal address the operator has not allowed'
  },
  credentialExists: {
    code: 'APP_LLM_CREDENTIAL_EXISTS',
    status: 409,
    message: ({ name }: { name: string }) => `A credential named ${name} is already here`,
    details: () => fieldIssue('body.name', 'is taken at this level'),
    description: 'another credential at this level has the name'
  },
  credentialLimit: {
    code: 'APP_LLM_CREDENTIAL_LIMIT',
    status: 409,
    message: ({ limit }: { limit: number }) => `An organization or project holds at most ${limit} LLM credentials`,
    details: ({ limit }) => ({ limit }),
    description: 'the level already holds as many credentials as it may'
  },
  credentialNotFound: { code: 'APP_LLM_CREDENTIAL_NOT_FOUND', status: 404, message: 'LLM credential not found', description: 'no such credential at this level' },
  settingsInvalid: {
    code: 'APP_LLM_SETTINGS_INVALID',
    status: 400,
    message: ({ problem }: { problem: string, path: string, issue: string }) => problem,
    details: ({ path, issue }) => fieldIssue(path, issue),
    description: 'a setting is not one this level has, or a model is not written `<credential>:<model>`'
  },
  noModel: {
    code: 'APP_LLM_NO_MODEL',
    status: 409,
    message: 'No model is named and no default model is set for the project or its organization',
    description: 'a call named no model and none is set by default'
  },
  modelNotAllowed: {
    code: 'APP_LLM_MODEL_NOT_ALLOWED',
    status: 409,
    message: ({ model }: { model: string }) => `The model ${model} is not among the models allowed here`,
    description: 'the model is outside the organization\'s or the project\'s allowed models'
  },
  noCredential: {
    code: 'APP_LLM_NO_CREDENTIAL',
    status: 409,
    message: ({ name }: { name: string }) => `No credential named ${name} is usable here`,
    description: 'the model names a credential the project cannot use'
  },
  budgetExceeded: {
    code: 'APP_LLM_BUDGET_EXCEEDED',
    // 402, not 429: the AI SDK and OpenAI's clients retry 429 (and 408, 409, 5xx) on their own, and a monthly budget does not clear within a retry's wait.
    status: 402,
    message: ({ level, monthlyUsd, spentUsd, month }: { level: string, monthlyUsd: number, spentUsd: number, month: string }) => `The ${level}'s monthly LLM budget of ${monthlyUsd} USD is spent for ${month} (${spentUsd} USD used)`,
    description: 'the organization\'s or the project\'s monthly budget has nothing left this month (UTC); no model call was made'
  }
})
