import { errorCatalogue, fieldIssue } from '../platform/errors.js'

/**
 * Every code the identity family answers with, once: platform users, their
 * sessions, personal access tokens, SSH keys and single sign-on. Project end
 * users share the account rules (`weakPassword`, `invalidCredentials`…).
 */
export const identityErrors = errorCatalogue('identity', {
  platformAdminRequired: {
    code: 'APP_PLATFORM_ADMIN_REQUIRED',
    status: 403,
    message: ({ why }: { why: string }) => `Needs a platform administrator: ${why}`,
    description: 'the caller is not a platform administrator (a user PLATFORM_ADMINS lists), or calls with a personal access token narrowed by scopes'
  },
  invalidEmail: {
    code: 'APP_INVALID_EMAIL',
    status: 400,
    message: 'email is not a valid email address',
    details: () => fieldIssue('body.email', 'is not a valid email address'),
    description: 'the email address is not valid'
  },
  weakPassword: {
    code: 'APP_WEAK_PASSWORD',
    status: 400,
    message: ({ rule }: { rule: string, path: string }) => `Password must ${rule}`,
    details: ({ rule, path }) => fieldIssue(path, `must ${rule}`),
    description: 'the password is under 8 characters, over 256, or the email address itself'
  },
  emailTaken: {
    code: 'APP_EMAIL_TAKEN',
    status: 409,
    message: 'An account with this email already exists',
    details: () => fieldIssue('body.email', 'is taken'),
    description: 'an account with this email exists already'
  },
  invalidCredentials: {
    code: 'APP_INVALID_CREDENTIALS',
    status: 401,
    message: 'Email or password is incorrect',
    description: 'the email or the password is wrong: one answer for both, after the same work'
  },
  invalidRefreshToken: {
    code: 'APP_INVALID_REFRESH_TOKEN',
    status: 401,
    message: 'Refresh token is invalid, expired or already used',
    description: 'the refresh token is unknown, expired, revoked or already used (reusing one revokes its whole session)'
  },
  patNotAllowed: {
    code: 'APP_PAT_NOT_ALLOWED',
    status: 403,
    message: 'A personal access token cannot manage credentials (personal access tokens, SSH keys); sign in instead',
    description: 'a personal access token may not manage credentials: it needs a signed-in session'
  },
  invalidExpiry: {
    code: 'APP_INVALID_EXPIRY',
    status: 400,
    message: 'expiresAt must be a date-time in the future',
    details: () => fieldIssue('body.expiresAt', 'must be in the future'),
    description: '`expiresAt` is not in the future'
  },
  tooManyApiKeys: {
    code: 'APP_TOO_MANY_API_KEYS',
    status: 400,
    message: ({ limit }: { limit: number }) => `At most ${limit} active personal access tokens per user`,
    details: ({ limit }) => ({ limit }),
    description: 'the user holds as many active personal access tokens as one may'
  },
  apiKeyNotFound: { code: 'APP_API_KEY_NOT_FOUND', status: 404, message: 'API key not found', description: 'no such active personal access token of the caller' },
  invalidSshKey: {
    code: 'APP_INVALID_SSH_KEY',
    status: 400,
    message: ({ why }: { why: string }) => why,
    description: 'not one OpenSSH public key of an accepted type and size; the message says why'
  },
  sshKeyExists: {
    code: 'APP_SSH_KEY_EXISTS',
    status: 409,
    message: ({ fingerprint }: { fingerprint: string }) => `This key (${fingerprint}) is already registered`,
    description: 'the key is registered already, by a user or as a deploy key'
  },
  sshKeyNotFound: { code: 'APP_SSH_KEY_NOT_FOUND', status: 404, message: 'SSH key not found', description: 'no such SSH key of the caller' },
  ssoProviderNotFound: {
    code: 'APP_SSO_PROVIDER_NOT_FOUND',
    status: 404,
    message: ({ provider }: { provider: string }) => `SSO provider "${provider}" is not configured`,
    description: 'the server has no such SSO provider configured'
  },
  ssoRedirectNotAllowed: {
    code: 'APP_SSO_REDIRECT_NOT_ALLOWED',
    status: 400,
    message: 'redirectTo must be an absolute URL on an origin listed in SSO_ALLOWED_REDIRECTS',
    details: () => fieldIssue('query.redirectTo', 'is not on an allowed origin'),
    description: '`redirectTo` is not an absolute URL on an origin the server allows'
  },
  invalidSsoTicket: {
    code: 'APP_INVALID_SSO_TICKET',
    status: 401,
    message: 'SSO ticket is invalid, expired or already used',
    description: 'the ticket is unknown, expired or already traded'
  },
  // The codes a sign-in that did not complete lands with (`?error=`), never an HTTP answer of their own.
  ssoInvalidState: {
    code: 'APP_SSO_INVALID_STATE',
    status: 400,
    message: 'The sign-in is unknown, expired or already completed; start again',
    description: 'the sign-in is unknown, expired or already completed'
  },
  ssoProviderError: {
    code: 'APP_SSO_PROVIDER_ERROR',
    status: 400,
    message: ({ error }: { error: string }) => `The provider answered "${error.slice(0, 64)}"`,
    description: 'the provider answered with an error (the user cancelled, or the provider refused)'
  },
  ssoInvalidResponse: {
    code: 'APP_SSO_INVALID_RESPONSE',
    status: 400,
    message: ({ why }: { why: string }) => why,
    description: 'the provider\'s answer lacks its code or names another issuer'
  },
  ssoCodeRejected: {
    code: 'APP_SSO_CODE_REJECTED',
    status: 400,
    message: ({ why }: { why: string }) => why,
    description: 'the provider\'s token endpoint refused the authorization code or returned no ID token'
  },
  ssoInvalidIdToken: {
    code: 'APP_SSO_INVALID_ID_TOKEN',
    status: 400,
    message: ({ why }: { why: string }) => why,
    description: 'the ID token failed its signature, issuer, audience or nonce checks'
  },
  ssoEmailNotVerified: {
    code: 'APP_SSO_EMAIL_NOT_VERIFIED',
    status: 400,
    message: ({ why }: { why: string }) => why,
    description: 'the provider shared no email address, or has not verified it'
  },
  ssoProviderUnavailable: {
    code: 'APP_SSO_PROVIDER_UNAVAILABLE',
    status: 502,
    message: ({ why }: { why: string }) => why,
    description: 'the provider could not be reached, or its discovery document or keys are unusable'
  },
  ssoFailed: {
    code: 'APP_SSO_FAILED',
    status: 500,
    message: 'The sign-in failed',
    description: 'the sign-in failed for a reason the server log holds'
  }
})

/** What a sign-in that did not complete may land with (`?error=<code>`); anything else lands as `ssoFailed`. */
export const SSO_FAILURES = [
  identityErrors.ssoInvalidState, identityErrors.ssoProviderError, identityErrors.ssoInvalidResponse, identityErrors.ssoCodeRejected,
  identityErrors.ssoInvalidIdToken, identityErrors.ssoEmailNotVerified, identityErrors.ssoProviderUnavailable
]
