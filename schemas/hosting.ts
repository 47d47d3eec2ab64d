import { Type, type Static } from '@sinclair/typebox'
import { Created, Envelope } from './envelope.js'
import { DateTime, Deleted, Id } from './common.js'

/** Limits of the hosting family, used by both the schemas and the services. */
export const HOSTING_LIMITS = {
  /** Instances of one app at most (scaling's `max`). */
  instancesMax: 10,
  /** An uploaded source archive, bytes. */
  sourceArchiveBytes: 200 * 1024 * 1024,
  /** The unpacked source tree, bytes, and its entries. */
  sourceTreeBytes: 1024 * 1024 * 1024,
  sourceTreeEntries: 100_000,
  secretsPerApp: 100,
  secretValueBytes: 32 * 1024,
  envFileBytes: 256 * 1024,
  logLineChars: 4096,
  logPageMax: 1000,
  deploymentsPageMax: 100,
  timelinePageMax: 200,
  usageHoursMax: 24 * 31
} as const

const Nullable = <T extends ReturnType<typeof Type.String>>(schema: T) => Type.Union([schema, Type.Null()])
/** An app's name: also a DNS label under HOSTING_APPS_DOMAIN, so at most 40 characters, no leading or trailing `-`. */
export const APP_NAME_PATTERN = '^[a-z0-9](?:[a-z0-9-]{0,38}[a-z0-9])?$'
const AppName = Type.String({ minLength: 1, maxLength: 40, pattern: APP_NAME_PATTERN, description: 'Lower-case letters, digits and `-`, unique on the server: the app answers at `<name>.<HOSTING_APPS_DOMAIN>`' })
const SecretName = Type.String({ minLength: 1, maxLength: 128, pattern: '^[A-Za-z_][A-Za-z0-9_]*$', description: 'An environment variable name' })
const Sha256 = Type.String({ pattern: '^[0-9a-fA-F]{64}$', description: 'SHA-256 of the whole archive, hex' })

export const APP_STATES = ['created', 'deploying', 'running', 'degraded', 'crashed', 'suspended'] as const
export const DEPLOYMENT_STATES = ['queued', 'building', 'releasing', 'live', 'failed', 'build_failed', 'canceled', 'superseded'] as const
export const INSTANCE_STATES = ['starting', 'running', 'crashed', 'stopped'] as const

const AppState = Type.Union(APP_STATES.map((state) => Type.Literal(state)), { description: '`created` before its first deployment; `deploying` while one builds or releases, or while a resumed app\'s instances start; `running` with every instance up; `degraded` with some down; `crashed` with none; `suspended` by request' })
const DeploymentState = Type.Union(DEPLOYMENT_STATES.map((state) => Type.Literal(state)), { description: 'queued → building → releasing → live, or failed (an instance did not become healthy), build_failed, canceled; a live deployment becomes superseded when another goes live' })

export const Scaling = Type.Object({
  instances: Type.Integer({ minimum: 0, maximum: HOSTING_LIMITS.instancesMax, description: 'Instances the live deployment runs' }),
  min: Type.Integer({ minimum: 0, maximum: HOSTING_LIMITS.instancesMax }),
  max: Type.Integer({ minimum: 1, maximum: HOSTING_LIMITS.instancesMax })
}, { additionalProperties: false })

export const GitSource = Type.Object({
  repositoryId: Nullable(Type.String({ description: 'A repository of this server\'s git hosting, in the same project' })),
  url: Nullable(Type.String({ description: 'An external https repository; null for this server\'s own' })),
  branch: Type.String(),
  subdirectory: Type.String({ description: 'Built from this folder of the tree; empty for the root' }),
  autoDeploy: Type.Boolean({ description: 'Deploy on every push to the branch (this server\'s git hosting only)' }),
  autoDeployPaused: Type.Boolean({ description: 'Set by a rollback; setting the git source again clears it' }),
  lastCommit: Nullable(Type.String({ description: 'The commit last deployed from this source' }))
})

export const GitSourceBody = Type.Object({
  repositoryId: Type.Optional(Id),
  url: Type.Optional(Type.String({ minLength: 1, maxLength: 2048, description: 'This server\'s clone URL of one of the project\'s repositories (read as `repositoryId`), or an external `https://` URL' })),
  branch: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'Defaults to the repository\'s default branch, else `main`' })),
  subdirectory: Type.Optional(Type.String({ maxLength: 1024, description: 'A relative folder; no `..`' })),
  autoDeploy: Type.Optional(Type.Boolean({ description: 'Defaults to true for this server\'s repositories' }))
}, { additionalProperties: false, description: 'Give `repositoryId` or `url`' })

const Source = Type.Object({
  type: Type.Union([Type.Literal('upload'), Type.Literal('git'), Type.Literal('rollback')]),
  uploadId: Nullable(Type.String()),
  sha256: Nullable(Type.String({ description: 'Of the uploaded archive' })),
  repositoryId: Nullable(Type.String()),
  url: Nullable(Type.String()),
  branch: Nullable(Type.String()),
  commit: Nullable(Type.String()),
  subdirectory: Nullable(Type.String())
})

export const Deployment = Type.Object({
  id: Type.String(),
  appId: Type.String(),
  state: DeploymentState,
  reason: Nullable(Type.String({ description: 'Why it failed, was canceled or superseded' })),
  source: Source,
  trigger: Type.Union([Type.Literal('api'), Type.Literal('push'), Type.Literal('rollback')]),
  artifactId: Nullable(Type.String({ description: 'The built artifact; a rollback reuses an earlier one' })),
  rollbackOf: Nullable(Type.String({ description: 'The deployment whose artifact a rollback runs again' })),
  buildSeconds: Type.Union([Type.Number(), Type.Null()]),
  createdBy: Nullable(Type.String()),
  createdAt: DateTime,
  startedAt: Nullable(DateTime),
  finishedAt: Nullable(DateTime),
  liveAt: Nullable(DateTime)
}, { $id: 'HostingDeployment' })

export const Instance = Type.Object({
  id: Type.String(),
  deploymentId: Type.String(),
  state: Type.Union(INSTANCE_STATES.map((state) => Type.Literal(state))),
  host: Nullable(Type.String()),
  port: Type.Union([Type.Integer(), Type.Null()]),
  reason: Nullable(Type.String()),
  startedAt: Nullable(DateTime),
  stoppedAt: Nullable(DateTime)
}, { $id: 'HostingInstance' })

const AppFields = {
  id: Type.String(),
  projectId: Type.String(),
  name: Type.String(),
  state: AppState,
  hostname: Type.String({ description: 'Where the gateway serves it: `<name>.<HOSTING_APPS_DOMAIN>`' }),
  gitSource: Type.Union([GitSource, Type.Null()]),
  liveDeploymentId: Nullable(Type.String()),
  createdAt: DateTime,
  updatedAt: DateTime
}

export const App = Type.Object({
  ...AppFields,
  scaling: Scaling,
  healthCheckPath: Type.String(),
  degradedReason: Nullable(Type.String({ description: 'Where the host falls short of full isolation for this app\'s instances' })),
  currentDeployment: Type.Union([Type.Ref(Deployment), Type.Null()], { description: 'The live deployment, else the latest' }),
  instances: Type.Array(Type.Ref(Instance))
}, { $id: 'HostingApp' })

export const StaticApp = Type.Object({
  ...AppFields,
  spaFallback: Type.Boolean({ description: 'Unknown paths without an extension answer with /index.html' }),
  currentDeployment: Type.Union([Type.Ref(Deployment), Type.Null()])
}, { $id: 'HostingStaticApp' })

export const CreateAppBody = Type.Object({
  name: AppName,
  healthCheckPath: Type.Optional(Type.String({ minLength: 1, maxLength: 256, pattern: '^/', description: 'Asked with GET before an instance takes traffic; defaults to `/`' })),
  scaling: Type.Optional(Type.Object({ instances: Type.Optional(Scaling.properties.instances), min: Type.Optional(Scaling.properties.min), max: Type.Optional(Scaling.properties.max) }, { additionalProperties: false }))
}, { additionalProperties: false })
export const CreateStaticAppBody = Type.Object({
  name: AppName,
  spaFallback: Type.Optional(Type.Boolean())
}, { additionalProperties: false })
export const ScalingBody = Type.Object({
  instances: Type.Integer({ minimum: 0, maximum: HOSTING_LIMITS.instancesMax, description: 'Sets the count; `min` and `max` left out widen to take it' }),
  min: Type.Optional(Scaling.properties.min),
  max: Type.Optional(Scaling.properties.max)
}, { additionalProperties: false })

export const ProjectHostingParams = Type.Object({ projectId: Id })
export const AppParams = Type.Object({ projectId: Id, appId: Id })
export const DeploymentParams = Type.Object({ projectId: Id, appId: Id, deploymentId: Id })
export const SecretParams = Type.Object({ projectId: Id, appId: Id, name: SecretName })

export const StartSourceUploadBody = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 255, description: 'The archive\'s file name, `.tar.gz`, `.tgz` or `.tar`' }),
  size: Type.Integer({ minimum: 1, maximum: HOSTING_LIMITS.sourceArchiveBytes }),
  sha256: Sha256
}, { additionalProperties: false })
export const SourceUploadParams = Type.Object({ projectId: Id, appId: Id, sessionId: Id })
export const SourceChunkParams = Type.Object({ projectId: Id, appId: Id, sessionId: Id, index: Type.Integer({ minimum: 0, maximum: 9999 }) })
export const SourceUpload = Type.Object({
  id: Type.String(),
  size: Type.Integer(),
  sha256: Nullable(Type.String()),
  chunkSize: Type.Integer({ description: 'Every chunk but the last is exactly this long' }),
  chunkCount: Type.Integer(),
  missing: Type.Array(Type.Integer()),
  status: Type.String(),
  expiresAt: DateTime
})

export const DeployFromUploadBody = Type.Object({ uploadId: Id }, { additionalProperties: false })
export const DeployFromGitBody = Type.Object({
  ref: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'A branch, tag or commit; defaults to the git source\'s branch' }))
}, { additionalProperties: false })
export const ListDeploymentsQuery = Type.Object({ limit: Type.Optional(Type.Integer({ minimum: 1, maximum: HOSTING_LIMITS.deploymentsPageMax })) }, { additionalProperties: false })

export const Secret = Type.Object({
  name: Type.String(),
  version: Type.Integer({ description: 'Goes up by one on every change' }),
  buildTime: Type.Boolean({ description: 'Also given to builds. Every secret reaches the app\'s instances; only these reach its builds, where every installed dependency\'s scripts run' }),
  updatedAt: DateTime
}, { $id: 'HostingSecret', description: 'Values are sealed at rest and never returned' })
const BuildTimeFlag = Type.Optional(Type.Boolean({ description: 'Give the value to builds too (install and build scripts, the scripts of every dependency installed). Omitted: the secret keeps its setting; a new one is runtime only' }))
export const PutSecretBody = Type.Object({ value: Type.String({ maxLength: HOSTING_LIMITS.secretValueBytes }), buildTime: BuildTimeFlag }, { additionalProperties: false })
export const ImportSecretsBody = Type.Object({ env: Type.String({ minLength: 1, maxLength: HOSTING_LIMITS.envFileBytes, description: 'A `.env` text: `NAME=value` lines, `export ` prefixes, quoted values, `#` comments' }), buildTime: BuildTimeFlag }, { additionalProperties: false })

export const LogLine = Type.Object({
  seq: Type.Integer({ description: 'Increasing within the deployment\'s log: `after` resumes from it' }),
  at: DateTime,
  instanceId: Nullable(Type.String()),
  stream: Type.Union([Type.Literal('stdout'), Type.Literal('stderr'), Type.Literal('system')]),
  line: Type.String({ description: 'Secret values are masked as `********`' })
})
export const LogsQuery = Type.Object({
  deploymentId: Type.Optional(Id),
  after: Type.Optional(Type.Integer({ minimum: 0 })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: HOSTING_LIMITS.logPageMax })),
  follow: Type.Optional(Type.Boolean({ description: 'Stream new lines as Server-Sent Events until the client goes away' }))
}, { additionalProperties: false })

export const TimelineEvent = Type.Object({
  id: Type.String(),
  at: DateTime,
  type: Type.String({ description: 'app.created, app.state, deployment.state, scaled, suspended, unsuspended, secret.set, secret.deleted, git-source.set, hostname.*, certificate.*' }),
  message: Type.String(),
  deploymentId: Nullable(Type.String())
})
export const TimelineQuery = Type.Object({ limit: Type.Optional(Type.Integer({ minimum: 1, maximum: HOSTING_LIMITS.timelinePageMax })) }, { additionalProperties: false })

const Traffic = {
  requests: Type.Integer(),
  status4xx: Type.Integer(),
  status5xx: Type.Integer(),
  latencyMs: Type.Object({ p50: Type.Number(), p95: Type.Number(), p99: Type.Number() }, { description: 'Over the most recent requests' })
}
export const Metrics = Type.Object({
  app: Type.Object(Traffic),
  instances: Type.Array(Type.Object({
    instanceId: Type.String(),
    ...Traffic,
    cpuSeconds: Type.Union([Type.Number(), Type.Null()]),
    memoryBytes: Type.Union([Type.Integer(), Type.Null()])
  })),
  since: DateTime
})
export const UsageRow = Type.Object({
  hour: DateTime,
  instanceSeconds: Type.Number(),
  buildSeconds: Type.Number(),
  requests: Type.Integer(),
  egressBytes: Type.Integer()
})
export const UsageQuery = Type.Object({ hours: Type.Optional(Type.Integer({ minimum: 1, maximum: HOSTING_LIMITS.usageHoursMax, description: 'How many hours back; defaults to 24' })) }, { additionalProperties: false })

/** Each route's success answer; route-auth adds the refusals its declaration names. */
export const HostingResponses = {
  appList: { 200: Envelope(Type.Array(Type.Ref(App))) },
  appCreated: { 201: Created(Type.Ref(App)) },
  app: { 200: Envelope(Type.Ref(App)) },
  staticCreated: { 201: Created(Type.Ref(StaticApp)) },
  staticList: { 200: Envelope(Type.Array(Type.Ref(StaticApp))) },
  staticApp: { 200: Envelope(Type.Ref(StaticApp)) },
  deleted: { 200: Envelope(Deleted) },
  sourceUploadStarted: { 201: Created(SourceUpload) },
  sourceUpload: { 200: Envelope(SourceUpload) },
  deploymentCreated: { 202: Created(Type.Ref(Deployment)) },
  deploymentList: { 200: Envelope(Type.Array(Type.Ref(Deployment))) },
  deployment: { 200: Envelope(Type.Ref(Deployment)) },
  secretList: { 200: Envelope(Type.Array(Type.Ref(Secret))) },
  secret: { 200: Envelope(Type.Ref(Secret)) },
  logs: {
    200: {
      description: 'A page of lines in the envelope; with `follow=true`, Server-Sent Events',
      content: {
        'application/json': { schema: Envelope(Type.Array(LogLine)) },
        'text/event-stream': { schema: Type.String({ description: '`log` events, each line\'s JSON as `data` and its `seq` as `id`; comments keep the connection alive' }) }
      }
    }
  },
  timeline: { 200: Envelope(Type.Array(TimelineEvent)) },
  metrics: { 200: Envelope(Metrics) },
  usage: { 200: Envelope(Type.Array(UsageRow)) }
}

export const hostingSchemas = [Deployment, Instance, App, StaticApp, Secret]
export type AppT = Static<typeof App>
export type StaticAppT = Static<typeof StaticApp>
export type AppState = typeof APP_STATES[number]
export type DeploymentT = Static<typeof Deployment>
export type DeploymentState = typeof DEPLOYMENT_STATES[number]
export type InstanceT = Static<typeof Instance>
export type InstanceState = typeof INSTANCE_STATES[number]
export type ScalingT = Static<typeof Scaling>
export type GitSourceT = Static<typeof GitSource>
export type GitSourceBodyT = Static<typeof GitSourceBody>
export type CreateAppBodyT = Static<typeof CreateAppBody>
export type SecretT = Static<typeof Secret>
export type LogLineT = Static<typeof LogLine>
export type TimelineEventT = Static<typeof TimelineEvent>
export type MetricsT = Static<typeof Metrics>
export type UsageRowT = Static<typeof UsageRow>
export type SourceUploadT = Static<typeof SourceUpload>
