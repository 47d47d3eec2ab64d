import { randomBytes } from 'node:crypto'
import { createReadStream } from 'node:fs'
import type { Readable } from 'node:stream'
import { Type, type Static } from '@sinclair/typebox'
import type { HostingApps } from '../hosting/apps.js'
import type { Deployments } from '../hosting/deployments.js'
import type { AppSecrets } from '../hosting/secrets.js'
import type { AppSources } from '../hosting/app-sources.js'
import type { Timeline } from '../hosting/timeline.js'
import { AppError, commonErrors } from '../platform/errors.js'
import type { AppRecord, DeploymentRecord } from '../hosting/records.js'
import { hostingErrors } from '../hosting/errors.js'
import type { UploadSessions } from '../files/uploads.js'
import type { Repositories } from '../git/repositories.js'
import { APP_NAME_PATTERN, HOSTING_LIMITS } from '../../schemas/hosting.js'

/**
 * A project's hosting apps in its archive (docs/export.md, "Hosting apps"):
 * `hosting/<name>.json` holds an app's definition, the names of its secrets
 * (never their values) and what its live deployment was made of;
 * `hosting/<name>.source` the uploaded archive that deployment built, when it
 * came from an upload. A git source travels as its repository's slug, the
 * repository itself being in the archive.
 */

/** What the archive reads and writes of the hosting family. */
export interface HostingArchivePort {
  apps: HostingApps
  deployments: Deployments
  secrets: AppSecrets
  sources: AppSources
  uploads: UploadSessions
  timeline: Timeline
  /** Off: apps are created but nothing is deployed, as the hosting routes would answer. */
  enabled: boolean
}

export const APP_NAME = new RegExp(APP_NAME_PATTERN)

export const AppEntrySchema = Type.Object({
  name: Type.String({ pattern: APP_NAME_PATTERN }),
  kind: Type.Union([Type.Literal('container'), Type.Literal('static')]),
  scaling: Type.Object({ instances: Type.Integer({ minimum: 0 }), min: Type.Integer({ minimum: 0 }), max: Type.Integer({ minimum: 0 }) }),
  healthCheckPath: Type.String({ minLength: 1, maxLength: 256, pattern: '^/' }),
  spaFallback: Type.Boolean(),
  suspended: Type.Boolean(),
  gitSource: Type.Union([Type.Null(), Type.Object({
    /** The slug of the project's own repository, or null for an external URL. */
    repository: Type.Union([Type.String({ minLength: 1 }), Type.Null()]),
    url: Type.Union([Type.String({ minLength: 1 }), Type.Null()]),
    branch: Type.String({ minLength: 1 }),
    subdirectory: Type.String(),
    autoDeploy: Type.Boolean()
  })]),
  /** Names only: the values are sealed under the exporting server's master key. */
  secrets: Type.Array(Type.String()),
  live: Type.Union([
    Type.Null(),
    Type.Object({ type: Type.Literal('upload'), sha256: Type.String({ pattern: '^[0-9a-f]{64}$' }) }),
    Type.Object({ type: Type.Literal('git'), commit: Type.Union([Type.String(), Type.Null()]) })
  ])
})
export type AppEntry = Static<typeof AppEntrySchema>

type Add = (path: string, size: number, body: AsyncIterable<Buffer>) => Promise<void>
type AddJson = (path: string, value: unknown) => Promise<void>

/** The deployment whose source the live one was built from: a rollback's is the deployment it rolled back to. */
async function builtFrom (port: HostingArchivePort, app: AppRecord): Promise<DeploymentRecord | null> {
  let deployment = await port.deployments.current(app)
  for (let hops = 0; deployment !== null && deployment.source.type === 'rollback' && deployment.rollbackOf !== null && hops < 20; hops++) {
    deployment = await port.deployments.find(app._id, deployment.rollbackOf).catch(() => null)
  }
  return deployment !== null && deployment.source.type !== 'rollback' && deployment.liveAt !== null ? deployment : null
}

/** Writes each app of the project; how many. */
export async function exportApps (port: HostingArchivePort, repositories: Repositories, projectId: string, add: Add, addJson: AddJson): Promise<number> {
  const apps = [...await port.apps.list(projectId, 'container'), ...await port.apps.list(projectId, 'static')]
  const slugs = new Map((await repositories.list(projectId)).map((repo) => [repo._id, repo.slug]))
  for (const app of apps) {
    const source = app.gitSource
    const deployment = await builtFrom(port, app)
    let live: AppEntry['live'] = null
    if (deployment?.source.type === 'upload') {
      const opened = await port.uploads.openFile({ projectId, table: '_hosting', recordId: app._id, field: 'source' }, deployment.source.fileId).catch(() => null)
      if (opened !== null) {
        await add(`hosting/${app.name}.source`, opened.size, opened.stream as Readable & AsyncIterable<Buffer>)
        live = { type: 'upload', sha256: deployment.source.sha256 }
      }
    } else if (deployment?.source.type === 'git') {
      live = { type: 'git', commit: deployment.source.commit }
    }
    const entry: AppEntry = {
      name: app.name,
      kind: app.kind,
      scaling: { ...app.scaling },
      healthCheckPath: app.healthCheckPath,
      spaFallback: app.spaFallback,
      suspended: app.suspended,
      gitSource: source === null
        ? null
        : { repository: source.repositoryId === null ? null : slugs.get(source.repositoryId) ?? null, url: source.url, branch: source.branch, subdirectory: source.subdirectory, autoDeploy: source.autoDeploy },
      secrets: (await port.secrets.list(app._id)).map((secret) => secret.name),
      live
    }
    await addJson(`hosting/${app.name}.json`, entry)
  }
  return apps.length
}

/** An app created by an import, with what its first deployment is made of. */
export interface ImportedApp {
  app: AppRecord
  entry: AppEntry
  /** The carried archive of an upload-built app, stored as the new app's file. */
  fileId: string | null
}

/**
 * The app under its own name when that is free on this server (names are
 * hostnames, unique server-wide), else the name with a random suffix.
 */
async function createApp (port: HostingArchivePort, projectId: string, entry: AppEntry): Promise<AppRecord> {
  const input = entry.kind === 'static'
    ? { name: entry.name, spaFallback: entry.spaFallback }
    : { name: entry.name, healthCheckPath: entry.healthCheckPath, scaling: entry.scaling }
  for (let attempt = 0; ; attempt++) {
    const name = attempt === 0 ? entry.name : `${entry.name.slice(0, 31).replace(/-+$/, '')}-${randomBytes(4).toString('hex')}`
    try {
      return await port.apps.create(projectId, entry.kind, { ...input, name })
    } catch (error) {
      if (!hostingErrors.nameTaken.is(error) || attempt >= 3) throw error
    }
  }
}

/**
 * Creates the archive's apps in the new project: definitions, the git source
 * (the project's repository found again by slug, an external URL checked as
 * when it is set through the API), the carried upload stored under the app.
 * `sourceFile(name)` is where the import put `hosting/<name>.source`.
 */
export async function importApps (port: HostingArchivePort, repositories: Repositories, projectId: string, entries: AppEntry[], sourceFile: (name: string) => string | null): Promise<ImportedApp[]> {
  const imported: ImportedApp[] = []
  for (const entry of entries) {
    let app = await createApp(port, projectId, entry)
    const source = entry.gitSource
    if (source !== null) {
      const repo = source.repository === null ? null : await repositories.find(projectId, source.repository)
      const body = repo === null ? { url: source.url ?? '', branch: source.branch, subdirectory: source.subdirectory } : { repositoryId: repo._id, branch: source.branch, subdirectory: source.subdirectory, autoDeploy: source.autoDeploy }
      app = await port.apps.setGitSource(app, await port.sources.gitSource(app, body))
    }
    let fileId: string | null = null
    const file = sourceFile(entry.name)
    if (entry.live?.type === 'upload' && file !== null) {
      const stored = await port.uploads.storeWhole({ projectId, table: '_hosting', recordId: app._id, field: 'source' }, {
        name: 'source.tar.gz', type: 'application/gzip', body: createReadStream(file), maxSize: HOSTING_LIMITS.sourceArchiveBytes, sha256: entry.live.sha256
      })
      fileId = stored.id
    }
    imported.push({ app, entry, fileId })
  }
  return imported
}

/** An app the import created but could not deploy: the project stands, and this says what to deploy again. */
export interface DeployFailure { app: string, code: string, message: string }

/**
 * Once the project is in place: each app that was live on the exporting
 * server is deployed from what was carried (the upload, or the commit of the
 * imported repository), then suspended again if it was. The secrets are not
 * there yet; instances get them when they start, so setting them and
 * rolling back to this deployment restarts it without a build. The project
 * is visible by now, so a deployment that cannot be asked for fails that app
 * alone: it stays as created, its timeline says why, and the failure is
 * given back for the import's answer.
 */
export async function deployImportedApps (port: HostingArchivePort, imported: ImportedApp[], userId: string): Promise<DeployFailure[]> {
  if (!port.enabled) return []
  const failures: DeployFailure[] = []
  for (const { app, entry, fileId } of imported) {
    const live = entry.live
    try {
      if (live?.type === 'upload' && fileId !== null) {
        await port.deployments.create(app, { source: { type: 'upload', uploadId: fileId, fileId, sha256: live.sha256 }, trigger: 'api', createdBy: userId })
      } else if (live?.type === 'git' && app.gitSource !== null) {
        await port.sources.deployGit(app, app.gitSource.repositoryId === null ? undefined : live.commit ?? undefined, 'api', userId)
      } else continue
      if (entry.suspended) await port.apps.suspend(app)
    } catch (error) {
      // A refusal's message is the client's to read; anything else stays out of the answer, as the error handler keeps it.
      const refusal = error instanceof AppError && error.status < 500
      const failure = { app: app.name, code: refusal ? error.code : commonErrors.internal.code, message: refusal ? error.message : 'The deployment could not be asked for' }
      failures.push(failure)
      await port.timeline.add(app, 'import.deploy_failed', `The import could not deploy what was live on the exporting server: ${failure.message}`).catch(() => {})
    }
  }
  return failures
}
