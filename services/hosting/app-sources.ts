import { join } from 'node:path'
import type { Readable } from 'node:stream'
import { AppError } from '../platform/errors.js'
import { hostingErrors } from './errors.js'
import type { UploadSessions, UploadSessionView } from '../files/uploads.js'
import { HOSTING_LIMITS, type DeploymentT, type GitSourceBodyT, type SourceUploadT } from '../../schemas/hosting.js'
import type { AppRecord, DeploymentRecord, GitSourceRecord } from './records.js'
import type { Deployments } from './deployments.js'
import type { ExternalGitGuard } from './external-git.js'
import { checkExternalUrl, checkSubdirectory, cloneExternal, gitArchive, narrowed, saveChecked, SourceError, unpackTar } from './sources.js'

/** What the hosting family needs of this server's git hosting. */
export interface GitHostingPort {
  /** One of the project's repositories by id or slug, or null. */
  repository: (projectId: string, which: { id: string } | { slug: string }) => Promise<{ id: string, gitDir: string, defaultBranch: string } | null>
  /** The commit a branch, tag or commit id names; throws the git family's 404 when none. */
  resolveCommit: (gitDir: string, rev: string) => Promise<string>
  /** Clone URLs of this server's repositories begin with this: `<PUBLIC_URL>/git/`. */
  cloneUrlPrefix: string
  /** The environment git runs in (no user config, no prompts). */
  env: () => Record<string, string>
}

const ARCHIVE_NAME = /\.(tar\.gz|tgz|tar)$/i

function uploadView (session: UploadSessionView): SourceUploadT {
  return { id: session.id, size: session.size, sha256: session.sha256, chunkSize: session.chunkSize, chunkCount: session.chunkCount, missing: session.missing, status: session.status, expiresAt: session.expiresAt }
}

/**
 * Where a deployment's source comes from: an archive uploaded through the
 * upload-session machinery collection files use, or a commit of a git
 * repository (this server's own, or an external https one), and the
 * unpacking of either into a build folder.
 */
export class AppSources {
  constructor (private readonly deps: { uploads: UploadSessions, deployments: Deployments, git: GitHostingPort, externalGit: ExternalGitGuard }) {}

  private owner (app: AppRecord) {
    return { projectId: app.projectId, table: '_hosting', recordId: app._id, field: 'source' }
  }

  async startUpload (app: AppRecord, input: { name: string, size: number, sha256: string }, createdBy: string): Promise<SourceUploadT> {
    if (!ARCHIVE_NAME.test(input.name)) throw hostingErrors.archiveInvalid()
    const type = /\.tar$/i.test(input.name) ? 'application/x-tar' : 'application/gzip'
    return uploadView(await this.deps.uploads.start(this.owner(app), { name: input.name, size: input.size, type, sha256: input.sha256, createdBy }))
  }

  async uploadStatus (app: AppRecord, sessionId: string): Promise<SourceUploadT> {
    return uploadView(await this.deps.uploads.status(sessionId, this.owner(app)))
  }

  async putChunk (app: AppRecord, sessionId: string, index: number, body: Buffer | Readable): Promise<SourceUploadT> {
    return uploadView(await this.deps.uploads.putChunk(sessionId, this.owner(app), index, body))
  }

  async completeUpload (app: AppRecord, sessionId: string): Promise<SourceUploadT> {
    await this.deps.uploads.complete(sessionId, this.owner(app), async () => {})
    return uploadView(await this.deps.uploads.status(sessionId, this.owner(app)))
  }

  async deployUpload (app: AppRecord, uploadId: string, createdBy: string): Promise<DeploymentT> {
    const session = await this.deps.uploads.status(uploadId, this.owner(app))
    if (session.status !== 'completed' || session.file === null) throw hostingErrors.uploadNotCompleted({ status: session.status })
    return await this.deps.deployments.create(app, { source: { type: 'upload', uploadId, fileId: session.file.id, sha256: session.file.sha256 }, trigger: 'api', createdBy })
  }

  /** Reads `repositoryId`, this server's clone URL, or an external https URL; checks the branch exists on this server's repositories. */
  async gitSource (app: AppRecord, body: GitSourceBodyT): Promise<GitSourceRecord> {
    if ((body.repositoryId === undefined) === (body.url === undefined)) throw hostingErrors.gitSourceInvalid({ message: 'Give repositoryId or url, not both', path: 'body', why: 'needs repositoryId or url' })
    const subdirectory = checkSubdirectory(body.subdirectory)
    let which: { id: string } | { slug: string } | null = body.repositoryId === undefined ? null : { id: body.repositoryId }
    if (body.url !== undefined && body.url.startsWith(this.deps.git.cloneUrlPrefix)) {
      const match = /^([0-9A-Za-z_-]{1,64})\/([A-Za-z0-9][A-Za-z0-9._-]{0,99}?)(\.git)?\/?$/.exec(body.url.slice(this.deps.git.cloneUrlPrefix.length))
      if (match === null || match[1] !== app.projectId) throw hostingErrors.gitSourceInvalid({ message: 'The clone URL must name a repository of this project', path: 'body.url', why: 'is not a repository of this project' })
      which = { slug: match[2] }
    }
    if (which !== null) {
      const repo = await this.deps.git.repository(app.projectId, which)
      if (repo === null) throw hostingErrors.gitSourceInvalid({ message: 'No such repository in this project', path: body.url === undefined ? 'body.repositoryId' : 'body.url', why: 'names no repository of this project' })
      return { repositoryId: repo.id, url: null, branch: body.branch ?? repo.defaultBranch, subdirectory, autoDeploy: body.autoDeploy ?? true, autoDeployPaused: false, lastCommit: app.gitSource?.repositoryId === repo.id ? app.gitSource.lastCommit : null }
    }
    const url = checkExternalUrl(body.url as string)
    if (body.autoDeploy === true) throw hostingErrors.gitSourceInvalid({ message: 'Auto-deploy on push needs a repository of this server', path: 'body.autoDeploy', why: 'needs a repository of this server' })
    await this.deps.externalGit.checkOnSet(url)
    return { repositoryId: null, url, branch: body.branch ?? 'main', subdirectory, autoDeploy: false, autoDeployPaused: false, lastCommit: null }
  }

  /** A deployment of the git source's branch, or of `ref`. */
  async deployGit (app: AppRecord, ref: string | undefined, trigger: 'api' | 'push', createdBy: string | null): Promise<DeploymentT> {
    const source = app.gitSource
    if (source === null) throw hostingErrors.noGitSource()
    let commit: string | null = null
    if (source.repositoryId !== null) {
      const repo = await this.deps.git.repository(app.projectId, { id: source.repositoryId })
      if (repo === null) throw hostingErrors.gitSourceGone()
      commit = await this.deps.git.resolveCommit(repo.gitDir, ref ?? `refs/heads/${source.branch}`)
    } else if (ref !== undefined && ref !== source.branch) {
      throw hostingErrors.gitSourceInvalid({ message: 'An external repository deploys its configured branch only', path: 'body.ref', why: 'must be the git source\'s branch' })
    }
    return await this.deps.deployments.create(app, { source: { type: 'git', repositoryId: source.repositoryId, url: source.url, branch: ref ?? source.branch, commit, subdirectory: source.subdirectory }, trigger, createdBy })
  }

  /** After a push to one of this server's repositories: apps following the pushed branch deploy its new head. */
  async afterPush (repo: { _id: string, projectId: string, gitDir: string }, apps: AppRecord[]): Promise<number> {
    let queued = 0
    for (const app of apps) {
      if (app.projectId !== repo.projectId || app.gitSource === null) continue
      const head = await this.deps.git.resolveCommit(repo.gitDir, `refs/heads/${app.gitSource.branch}`).catch(() => null)
      if (head === null || head === app.gitSource.lastCommit) continue
      if (await this.deps.deployments.pendingOf(app._id, head)) continue
      await this.deployGit(app, undefined, 'push', null)
      queued++
    }
    return queued
  }

  /** Fills `dir` with the deployment's source; the folder to build from. */
  async prepare (app: AppRecord, deployment: DeploymentRecord, dir: string): Promise<string> {
    const source = deployment.source
    const archive = join(dir, 'source.tar')
    const tree = join(dir, 'tree')
    if (source.type === 'upload') {
      let opened
      try {
        opened = await this.deps.uploads.openFile(this.owner(app), source.fileId)
      } catch (error) {
        if (error instanceof AppError && error.status === 404) throw new SourceError('The uploaded archive is gone')
        throw error
      }
      await saveChecked(opened.stream, archive, { sha256: source.sha256, maxBytes: HOSTING_LIMITS.sourceArchiveBytes })
      await unpackTar(archive, tree)
      return tree
    }
    if (source.type !== 'git') throw new SourceError('A rollback has no source to build')
    const env = this.deps.git.env()
    let gitDir: string
    let commit = source.commit
    if (source.repositoryId !== null) {
      const repo = await this.deps.git.repository(app.projectId, { id: source.repositoryId })
      if (repo === null) throw new SourceError('The repository no longer exists')
      gitDir = repo.gitDir
    } else {
      gitDir = join(dir, 'clone.git')
      // Checked again at every clone: the name may point elsewhere since the source was set.
      const remote = await this.deps.externalGit.checkOnClone(source.url as string)
      commit = await cloneExternal(remote.url, source.branch ?? 'main', gitDir, env, this.deps.externalGit.cloneOptions(remote))
      await this.deps.deployments.recordCommit(deployment._id, commit)
    }
    if (commit === null) throw new SourceError('No commit to deploy')
    await gitArchive(gitDir, commit, archive, env)
    await unpackTar(archive, tree)
    return await narrowed(tree, source.subdirectory)
  }

  async deleteForApp (app: AppRecord): Promise<void> {
    await this.deps.uploads.deleteOwnerFolder(app.projectId, '_hosting', app._id)
  }
}
