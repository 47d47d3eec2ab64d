import { errorCatalogue, fieldIssue } from '../platform/errors.js'

/**
 * Every code the projects family answers with, once: projects, their service
 * tokens and their end users' auth. A project the caller cannot see is
 * `commonErrors.projectNotFound`; account rules shared with platform users
 * (`weakPassword`, `invalidCredentials`…) are the identity family's.
 */
export const projectErrors = errorCatalogue('projects', {
  invalidOrigin: {
    code: 'APP_INVALID_ORIGIN',
    status: 400,
    message: ({ why }: { why: string, entry?: string }) => why,
    details: ({ entry }) => entry === undefined ? undefined : fieldIssue('body.allowedOrigins', `"${entry}" is not an origin`),
    description: 'an entry of `allowedOrigins` is not an origin such as https://app.example.com, or `*` is not alone'
  },
  authDisabled: {
    code: 'APP_PROJECT_AUTH_DISABLED',
    status: 403,
    message: 'End-user auth is switched off for this project',
    description: 'the project has end-user auth switched off'
  },
  invalidServiceToken: {
    code: 'APP_INVALID_SERVICE_TOKEN',
    status: 401,
    message: 'Service token is invalid, revoked, expired or for another project',
    description: 'the service token is unknown, revoked, expired or another project\'s'
  },
  tooManyServiceTokens: {
    code: 'APP_TOO_MANY_SERVICE_TOKENS',
    status: 400,
    message: ({ limit }: { limit: number }) => `At most ${limit} active service tokens per project`,
    details: ({ limit }) => ({ limit }),
    description: 'the project holds as many active service tokens as one may'
  },
  serviceTokenNotFound: { code: 'APP_SERVICE_TOKEN_NOT_FOUND', status: 404, message: 'Service token not found', description: 'no such active service token in the project' },
  userDisabled: {
    code: 'APP_USER_DISABLED',
    status: 401,
    message: 'This account is disabled',
    description: 'the end user\'s `disabled` flag is set: they cannot sign in'
  },
  mintForDisabledUser: {
    code: 'APP_END_USER_DISABLED',
    status: 403,
    message: 'This end user is disabled: no token is minted for them',
    description: 'the end user\'s `disabled` flag is set: no token is minted for them'
  },
  wrongPassword: {
    code: 'APP_WRONG_PASSWORD',
    status: 403,
    message: 'The current password is incorrect',
    details: () => fieldIssue('body.currentPassword', 'is incorrect'),
    description: 'the current password is wrong (403, so that clients do not take it for an expired token)'
  },
  reservedField: {
    code: 'APP_RESERVED_FIELD',
    status: 400,
    message: ({ message }: { message: string, path: string, issue: string }) => message,
    details: ({ path, issue }) => fieldIssue(path, issue),
    description: 'a field name is reserved (id, email, password, timestamps, `_` or `$` prefixes…) or cannot be stored'
  },
  extraFieldsTooLarge: {
    code: 'APP_EXTRA_FIELDS_TOO_LARGE',
    status: 400,
    message: ({ why }: { why: string, limit: number }) => why,
    details: ({ limit }) => ({ limit }),
    description: '`extraFields` holds more fields, nesting or bytes than a user may'
  },
  emailNotConfigured: {
    code: 'APP_PROJECT_EMAIL_NOT_CONFIGURED',
    status: 409,
    message: 'This project sends no email: its email settings are not set',
    description: 'the project has no email settings, so no verification, reset, email change or magic-link mail can be sent'
  },
  emailLinkInvalid: {
    code: 'APP_EMAIL_LINK_INVALID',
    status: 400,
    message: 'This link is invalid, used already or expired: ask for a new one',
    details: () => fieldIssue('body.token', 'is not a live link of this flow'),
    description: 'the token is unknown, of another flow or project, used already or expired'
  },
  emailNotVerified: {
    code: 'APP_EMAIL_NOT_VERIFIED',
    status: 403,
    message: 'This project signs in only verified email addresses: follow the verification link first',
    description: 'the project refuses sign-in until the end user\'s email address is verified'
  },
  smtpHostRefused: {
    code: 'APP_SMTP_HOST_REFUSED',
    status: 400,
    message: ({ why }: { why: string }) => why,
    details: () => fieldIssue('body.smtp.host', 'resolves nowhere or to an internal address'),
    description: 'the SMTP host resolves nowhere, or to an internal address the operator did not allow (`PROJECT_SMTP_ALLOWED_HOSTS`)'
  },
  oauthProviderNotFound: {
    code: 'APP_OAUTH_PROVIDER_NOT_FOUND',
    status: 404,
    message: ({ provider }: { provider: string }) => `This project has no sign-in provider "${provider}"`,
    description: 'the project has no OAuth/OIDC provider of that id'
  },
  oauthProviderDisabled: {
    code: 'APP_OAUTH_PROVIDER_DISABLED',
    status: 403,
    message: ({ provider }: { provider: string }) => `The sign-in provider "${provider}" is disabled`,
    description: 'the project\'s admin disabled this provider: it starts and completes no sign-in'
  },
  oauthRedirectNotAllowed: {
    code: 'APP_OAUTH_REDIRECT_NOT_ALLOWED',
    status: 400,
    message: 'redirectTo must be an absolute http(s) URL on one of the project\'s allowedOrigins',
    details: () => fieldIssue('query.redirectTo', 'is not on one of the project\'s allowed origins'),
    description: '`redirectTo` is not an absolute URL on an origin the project lists in `allowedOrigins` (`*` does not count)'
  },
  oauthIdentityNotFound: {
    code: 'APP_OAUTH_IDENTITY_NOT_FOUND',
    status: 404,
    message: ({ provider }: { provider: string }) => `No sign-in through "${provider}" is linked to this user`,
    description: 'the signed-in end user has no identity linked at this provider'
  },
  oauthLastSignInMethod: {
    code: 'APP_OAUTH_LAST_SIGN_IN_METHOD',
    status: 409,
    message: ({ provider }: { provider: string }) => `Signing in through "${provider}" is this user's only way in: set a password or link another provider first`,
    description: 'the identity is the end user\'s only way to sign in: no password, and no identity linked at another enabled provider'
  },
  oauthHostRefused: {
    code: 'APP_OAUTH_HOST_REFUSED',
    status: 400,
    message: ({ why }: { why: string, path: string }) => why,
    details: ({ path }) => fieldIssue(path, 'resolves nowhere or to an internal address'),
    description: 'the issuer or an endpoint resolves nowhere, or to an internal address the operator did not allow (`PROJECT_OAUTH_ALLOWED_HOSTS`)'
  }
})
