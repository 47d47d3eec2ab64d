import { errorCatalogue, fieldIssue } from '../platform/errors.js'

const LIMIT = ({ limit }: { limit: number }) => ({ limit })
/** A field's refusal in its own words: `message` for the client to read, `why` as `details.fields` names it at `path`. */
interface FieldRefusal { message: string, path: string, why: string }
const FIELD = ({ path, why }: FieldRefusal) => fieldIssue(path, why)
/** A DNS record a hostname needs and did not find as expected. */
interface RecordProblem { name: string, type: string, problem: string | null, expected: string }

/**
 * Every code the hosting family answers with, once: apps, deployments and
 * their sources, secrets, hostnames and certificates, and the gateway's own
 * pages. Services throw `hostingErrors.name(params)`, routes list
 * `hostingErrors.name`; the gateway's pages take their code and status here.
 */
export const hostingErrors = errorCatalogue('hosting', {
  // Apps
  disabled: {
    code: 'APP_HOSTING_DISABLED',
    status: 404,
    message: 'App hosting is not enabled on this server (HOSTING_ENABLED)',
    description: 'app hosting is off on this server (HOSTING_ENABLED)'
  },
  appNotFound: { code: 'APP_HOSTING_APP_NOT_FOUND', status: 404, message: 'App not found', description: 'no such app of this kind in the project' },
  nameTaken: {
    code: 'APP_HOSTING_NAME_TAKEN',
    status: 409,
    message: ({ name }: { name: string }) => `The name "${name}" is taken on this server`,
    details: () => fieldIssue('body.name', 'is taken'),
    description: 'an app (container or static, in any project) has this name on the server: it is the app\'s hostname'
  },
  suspended: { code: 'APP_HOSTING_SUSPENDED', status: 409, message: 'The app is already suspended', description: 'the app is suspended already' },
  notSuspended: { code: 'APP_HOSTING_NOT_SUSPENDED', status: 409, message: 'The app is not suspended', description: 'the app is not suspended' },
  scalingInvalid: {
    code: 'APP_HOSTING_SCALING_INVALID',
    status: 400,
    message: ({ message }: FieldRefusal) => message,
    details: FIELD,
    description: '`instances` lies outside `min` and `max`, `min` exceeds `max`, or `max` exceeds the server\'s limit'
  },

  // Deployments and their sources
  deploymentNotFound: { code: 'APP_HOSTING_DEPLOYMENT_NOT_FOUND', status: 404, message: 'Deployment not found', description: 'no such deployment of the app' },
  deploymentFinished: {
    code: 'APP_HOSTING_DEPLOYMENT_FINISHED',
    status: 409,
    message: ({ state }: { state: string }) => `The deployment is already ${state}`,
    description: 'the deployment has ended (live, failed, canceled or superseded)'
  },
  noArtifact: {
    code: 'APP_HOSTING_NO_ARTIFACT',
    status: 409,
    message: 'That deployment never built an artifact to roll back to',
    description: 'the deployment never built an artifact to roll back to'
  },
  noGitSource: {
    code: 'APP_HOSTING_NO_GIT_SOURCE',
    status: 409,
    message: 'The app has no git source; set one with PUT …/git-source',
    description: 'the app has no git source (PUT …/git-source sets one)'
  },
  gitSourceGone: {
    code: 'APP_HOSTING_GIT_SOURCE_GONE',
    status: 409,
    message: 'The git source\'s repository no longer exists',
    description: 'the git source\'s repository was deleted'
  },
  gitSourceInvalid: {
    code: 'APP_HOSTING_GIT_SOURCE_INVALID',
    status: 400,
    message: ({ message }: FieldRefusal) => message,
    details: FIELD,
    description: 'the git source names no repository of the project, or an external URL that is not https, ' +
      'or asks what only this server\'s repositories do (auto-deploy, another ref)'
  },
  gitSourceForbidden: {
    code: 'APP_HOSTING_GIT_SOURCE_FORBIDDEN',
    status: 400,
    message: ({ kind }: { kind: string }) => `The git source's host reaches ${article(kind)} ${kind} address, which this server does not fetch from; ` +
      'the operator may allow the host with HOSTING_GIT_ALLOWED_HOSTS',
    details: ({ kind }) => fieldIssue('body.url', `reaches ${article(kind)} ${kind} address`),
    description: 'the external host resolves to an internal address (loopback, private, link-local, unique-local…) ' +
      'the operator has not allowed (HOSTING_GIT_ALLOWED_HOSTS)'
  },
  subdirectoryInvalid: {
    code: 'APP_HOSTING_SUBDIRECTORY_INVALID',
    status: 400,
    message: 'subdirectory must be a relative folder without `..`',
    details: () => fieldIssue('body.subdirectory', 'must be a relative folder without ..'),
    description: '`subdirectory` is not a relative folder without `..`'
  },
  archiveInvalid: {
    code: 'APP_HOSTING_ARCHIVE_INVALID',
    status: 400,
    message: 'The archive must be a .tar.gz, .tgz or .tar file',
    details: () => fieldIssue('body.name', 'must end in .tar.gz, .tgz or .tar'),
    description: 'the archive\'s name is not `.tar.gz`, `.tgz` or `.tar`'
  },
  uploadNotCompleted: {
    code: 'APP_HOSTING_UPLOAD_NOT_COMPLETED',
    status: 409,
    message: ({ status }: { status: string }) => `The upload is ${status}; complete it first`,
    description: 'the source upload is not completed'
  },

  // Secrets
  secretInvalid: {
    code: 'APP_HOSTING_SECRET_INVALID',
    status: 400,
    message: ({ message }: { message: string, path: string, why: string } | { message: string, limit: number }) => message,
    details: (params) => 'limit' in params ? LIMIT(params) : fieldIssue(params.path, params.why),
    description: 'a name is not an environment variable name or is the platform\'s own (PORT, HOST, PLINTH_*), or a value is too long'
  },
  envInvalid: {
    code: 'APP_HOSTING_ENV_INVALID',
    status: 400,
    message: ({ line, problem }: { line?: number, problem: string }) => line === undefined ? `The text ${problem}` : `Line ${line} ${problem}`,
    details: ({ line, problem }) => fieldIssue('body.env', line === undefined ? problem : `line ${line} ${problem}`),
    description: 'a line of the .env text is not `NAME=value` (or a comment), a quote is unterminated, or it sets nothing'
  },
  secretsLimit: {
    code: 'APP_HOSTING_SECRETS_LIMIT',
    status: 409,
    message: ({ limit }: { limit: number }) => `An app holds at most ${limit} secrets`,
    details: LIMIT,
    description: 'the app would hold more secrets than the limit in `details.limit`'
  },
  secretNotFound: {
    code: 'APP_HOSTING_SECRET_NOT_FOUND',
    status: 404,
    message: ({ name }: { name: string }) => `No secret ${name}`,
    description: 'the app has no secret of this name'
  },

  // Hostnames and certificates
  invalidHostname: {
    code: 'APP_HOSTING_INVALID_HOSTNAME',
    status: 400,
    message: ({ input, why }: { input: string, why: string, path: string }) => `"${input}" is not a valid hostname: ${why}`,
    details: ({ path, why }) => fieldIssue(path, why),
    description: 'not a host name of two labels or more (an IP address is not one)'
  },
  hostnameNotFound: { code: 'APP_HOSTING_HOSTNAME_NOT_FOUND', status: 404, message: 'Hostname not found', description: 'the app carries no such hostname' },
  tooManyHostnames: {
    code: 'APP_HOSTING_TOO_MANY_HOSTNAMES',
    status: 409,
    message: ({ limit }: { limit: number }) => `An app carries at most ${limit} hostnames`,
    details: LIMIT,
    description: 'the app carries the most hostnames it may, given in `details.limit`'
  },
  hostnameBound: {
    code: 'APP_HOSTING_HOSTNAME_BOUND',
    status: 409,
    message: ({ hostname }: { hostname: string }) => `${hostname} is already bound to this app`,
    description: 'the app carries this hostname already'
  },
  hostnameTaken: {
    code: 'APP_HOSTING_HOSTNAME_TAKEN',
    status: 409,
    message: ({ hostname }: { hostname: string }) => `${hostname} is bound to another app`,
    description: 'another app on the server carries this hostname'
  },
  hostnameReserved: {
    code: 'APP_HOSTING_HOSTNAME_RESERVED',
    status: 409,
    message: ({ hostname, reserved }: { hostname: string, reserved: string }) =>
      `${hostname} is ${hostname === reserved ? '' : 'under '}${reserved}, which the platform keeps for itself`,
    description: 'the name is, or lies under, one the platform serves itself'
  },
  hostnameUnverified: {
    code: 'APP_HOSTING_HOSTNAME_UNVERIFIED',
    status: 409,
    message: ({ hostname, problems }: { hostname: string, problems: readonly RecordProblem[] }) =>
      `${hostname} is not verified: ${problems.map((check) => check.problem).join('; ')}`,
    details: ({ problems }) => ({ fields: problems.map((check: RecordProblem) => ({ path: `${check.name} ${check.type}`, message: `${String(check.problem)}; expected ${check.expected}` })) }),
    description: 'a DNS record the hostname needs is missing or wrong; `details.fields` names each'
  },
  hostnameNotVerified: {
    code: 'APP_HOSTING_HOSTNAME_NOT_VERIFIED',
    status: 409,
    message: ({ hostname }: { hostname: string }) => `${hostname} is not verified yet: a certificate is issued only for a hostname that points at the gateway`,
    description: 'the hostname is not verified yet'
  },
  acmeNotConfigured: {
    code: 'APP_HOSTING_ACME_NOT_CONFIGURED',
    status: 409,
    message: 'No ACME directory is configured (HOSTING_ACME_DIRECTORY_URL)',
    description: 'no ACME directory is configured (HOSTING_ACME_DIRECTORY_URL)'
  },
  zoneNotHosted: {
    code: 'APP_HOSTING_ZONE_NOT_HOSTED',
    status: 409,
    message: ({ hostname }: { hostname: string }) => `No zone of this project holds ${hostname}, so the DNS-01 challenge cannot be written`,
    description: '`dns-01` was asked and no zone of the project holds the hostname'
  },
  certificateInProgress: {
    code: 'APP_HOSTING_CERTIFICATE_IN_PROGRESS',
    status: 409,
    message: ({ hostname }: { hostname: string }) => `A certificate for ${hostname} is being issued already`,
    description: 'a certificate for the hostname is being issued already'
  },
  certificateNotFound: {
    code: 'APP_HOSTING_CERTIFICATE_NOT_FOUND',
    status: 404,
    message: 'No certificate was requested for this hostname',
    description: 'no certificate was requested for the hostname'
  },
  certificateFailed: {
    code: 'APP_HOSTING_CERTIFICATE_FAILED',
    status: 502,
    message: ({ hostname, detail }: { hostname: string, detail: string }) => `The ACME CA did not issue a certificate for ${hostname}: ${detail}`,
    description: 'the ACME CA did not issue the certificate; the message carries its problem'
  },

  // The gateway's own pages at the apps' hostnames (not under /api), in words for people
  gatewayUnknownHost: {
    code: 'APP_GATEWAY_UNKNOWN_HOST',
    status: 404,
    message: ({ host }: { host: string | null }) => host === null ? 'The request names no host.' : `No app is served at ${host}.`,
    description: 'no app is served at the request\'s host'
  },
  gatewayAppSuspended: {
    code: 'APP_GATEWAY_APP_SUSPENDED',
    status: 503,
    message: 'This app is suspended by its owner. Try again later.',
    description: 'the app is suspended; Retry-After says when to ask again'
  },
  gatewayNoUpstream: { code: 'APP_GATEWAY_NO_UPSTREAM', status: 502, message: 'No instance of this app is answering right now.', description: 'no instance of the app answers' },
  gatewayUpstreamTimeout: { code: 'APP_GATEWAY_UPSTREAM_TIMEOUT', status: 504, message: 'The app did not answer in time.', description: 'the app did not answer in time' },
  gatewayNotFound: { code: 'APP_GATEWAY_NOT_FOUND', status: 404, message: 'Nothing is published at this path.', description: 'a static app publishes nothing at the path' },
  gatewayMethodNotAllowed: {
    code: 'APP_GATEWAY_METHOD_NOT_ALLOWED',
    status: 405,
    message: 'A static site answers GET and HEAD only.',
    description: 'a static app answers GET and HEAD only'
  },
  gatewayBadRequest: { code: 'APP_GATEWAY_BAD_REQUEST', status: 400, message: ({ why }: { why: string }) => why, description: 'the request is not one the gateway forwards' }
})

function article (word: string): string {
  return /^[aeiou]/i.test(word) ? 'an' : 'a'
}
