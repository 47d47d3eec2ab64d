import { Type } from '@sinclair/typebox'
import { DnsRecord, ListRecordsQuery, Zone } from '../../schemas/dns.js'
import { Blob, BlobQuery, Commit, LogQuery, RepoParams, Repository } from '../../schemas/git.js'
import { App, AppParams, Deployment, DeploymentParams, DeployFromGitBody, Instance, ListDeploymentsQuery, LogLine, LogsQuery } from '../../schemas/hosting.js'
import type { Permission } from '../orgs/catalogue.js'
import { permissionMissing } from '../orgs/resolver.js'
import type { Repo } from '../git/repositories.js'
import { inlineRefs } from './inline-refs.js'
import type { ToolDefinition } from './registry.js'
import type { ProjectToolContext } from './project-tool-context.js'

type ProjectTool = ToolDefinition<any, any, ProjectToolContext>

const { repoSlug } = RepoParams.properties
const { appId } = AppParams.properties
const { deploymentId } = DeploymentParams.properties
const { follow: _follow, ...logQuery } = LogsQuery.properties
const itemsOf = <T extends Parameters<typeof Type.Array>[0]>(item: T) => Type.Object({ items: Type.Array(item) })

/**
 * A repository as its routes reach it (plugins/git.ts): the caller's
 * permissions in the project joined with their role in the repository, then
 * the route's permission.
 */
export async function repositoryFor (c: ProjectToolContext, slug: string, permission: Permission = 'git.read'): Promise<Repo> {
  const { repo, permissions } = await c.services.git.access.forRoute(c.caller, c.projectId, slug)
  if (!permissions.has(permission)) throw permissionMissing(permission, c.caller.scopes)
  return repo
}

/** A git tool's permission counts where its routes count it: in the project or through a role in any of its repositories. */
export const inRepositories = (permission: Permission) => async (c: ProjectToolContext): Promise<boolean> =>
  await c.services.git.access.holdsAnywhere(c.caller, c.projectId, permission)
const readsRepositories = inRepositories('git.read')

/** Git reads: the repositories, a file at a revision, the history. */
export const GIT_TOOLS: ProjectTool[] = [
  {
    name: 'git_repositories_list',
    title: 'List repositories',
    description: 'The project\'s git repositories the caller may read, with their default branch and clone URLs.',
    permission: 'git.read',
    heldBelow: readsRepositories,
    risk: 'read',
    input: Type.Object({}, { additionalProperties: false }),
    output: itemsOf(Repository),
    run: async (c) => {
      const repos = await c.services.git.access.readableRepositories(c.caller, c.projectId)
      return { items: await Promise.all(repos.map(async (repo) => await c.services.git.repositories.view(repo))) }
    }
  },
  {
    name: 'git_file_read',
    title: 'Read a file',
    description: 'A file of a repository at a revision (`query.ref`: a branch, tag or commit; the default branch when left out). ' +
      'Text comes as UTF-8, binary as base64; past the inline limit `content` is null.',
    permission: 'git.read',
    heldBelow: readsRepositories,
    risk: 'read',
    input: Type.Object({ repoSlug, query: BlobQuery }, { additionalProperties: false }),
    output: Blob,
    run: async (c, input) => await c.services.git.history.blob(await repositoryFor(c, input.repoSlug), input.query)
  },
  {
    name: 'git_commits_list',
    title: 'List commits',
    description: 'History from a revision, newest first, optionally only commits touching `query.path`; ' +
      'pass the answer\'s `nextCursor` as `query.cursor` for the next page.',
    permission: 'git.read',
    heldBelow: readsRepositories,
    risk: 'read',
    input: Type.Object({ repoSlug, query: Type.Optional(LogQuery) }, { additionalProperties: false }),
    output: Type.Object({ items: Type.Array(Commit), nextCursor: Type.Union([Type.String(), Type.Null()]) }),
    run: async (c, input) => await c.services.git.history.log(await repositoryFor(c, input.repoSlug), input.query ?? {})
  }
]

/** DNS reads: the zones and their records. */
export const DNS_TOOLS: ProjectTool[] = [
  {
    name: 'dns_zones_list',
    title: 'List DNS zones',
    description: 'The project\'s DNS zones, each with its provider and name servers.',
    permission: 'dns.read',
    risk: 'read',
    input: Type.Object({}, { additionalProperties: false }),
    output: itemsOf(Zone),
    run: async (c) => ({ items: await c.services.dns.zones.list(c.projectId) })
  },
  {
    name: 'dns_records_list',
    title: 'List DNS records',
    description: 'A zone\'s records as its provider holds them (SOA included), optionally of one absolute `name` or `type`.',
    permission: 'dns.read',
    risk: 'read',
    input: ListRecordsQuery,
    output: itemsOf(DnsRecord),
    run: async (c, input) => {
      const { zoneId: id, ...filter } = input
      return { items: await c.services.dns.records.list(await c.services.dns.zones.find(c.projectId, id), filter) }
    }
  }
]

/** Hosting: container apps, their deployments and their logs; redeploying and rolling back change what runs, so a person approves them. */
export const HOSTING_TOOLS: ProjectTool[] = [
  {
    name: 'hosting_apps_list',
    title: 'List hosted apps',
    description: 'The project\'s container apps, each with its current deployment and instances.',
    permission: 'hosting.read',
    risk: 'read',
    input: Type.Object({}, { additionalProperties: false }),
    output: inlineRefs(itemsOf(App), [Deployment, Instance]),
    run: async (c) => {
      const { apps } = c.services.hosting
      return { items: await Promise.all((await apps.list(c.projectId, 'container')).map(async (record) => await apps.view(record))) }
    }
  },
  {
    name: 'hosting_deployments_list',
    title: 'List an app\'s deployments',
    description: 'A container app\'s deployments, newest first: state, reason, source and artifact.',
    permission: 'hosting.read',
    risk: 'read',
    input: Type.Object({ appId, query: Type.Optional(ListDeploymentsQuery) }, { additionalProperties: false }),
    output: itemsOf(Deployment),
    run: async (c, input) => {
      const app = await c.services.hosting.apps.get(c.projectId, input.appId, 'container')
      return { items: await c.services.hosting.deployments.list(app._id, input.query?.limit ?? 20) }
    }
  },
  {
    name: 'hosting_logs_read',
    title: 'Read an app\'s recent logs',
    description: 'A container app\'s `build` or `runtime` log lines, oldest first: the newest `query.limit` lines, or those after ' +
      'the sequence number `query.after`; `query.deploymentId` narrows to one deployment. Secret values are masked.',
    permission: 'hosting.read',
    risk: 'read',
    input: Type.Object({
      appId,
      kind: Type.Union([Type.Literal('build'), Type.Literal('runtime')]),
      query: Type.Optional(Type.Object(logQuery, { additionalProperties: false }))
    }, { additionalProperties: false }),
    output: itemsOf(LogLine),
    run: async (c, input) => {
      const app = await c.services.hosting.apps.get(c.projectId, input.appId, 'container')
      return { items: await c.services.hosting.logs.read(app._id, input.kind, input.query ?? {}) }
    }
  },
  {
    name: 'hosting_app_redeploy',
    title: 'Redeploy an app from git',
    description: 'Queues a new deployment of a container app from its git source\'s branch (or `deploy.ref`: a branch, tag or commit ' +
      'of this server\'s repository): build, health-gated start, switch, stop the previous one. Answers the queued deployment.',
    permission: 'hosting.deploy',
    risk: 'critical',
    input: Type.Object({ appId, deploy: Type.Optional(DeployFromGitBody) }, { additionalProperties: false }),
    output: Deployment,
    run: async (c, input) => {
      const app = await c.services.hosting.apps.get(c.projectId, input.appId, 'container')
      return await c.services.hosting.sources.deployGit(app, input.deploy?.ref, 'api', c.caller.userId)
    }
  },
  {
    name: 'hosting_deployment_rollback',
    title: 'Roll an app back to a deployment',
    description: 'Queues a new deployment of an earlier deployment\'s artifact, without a build, and pauses git auto-deploy. ' +
      'Answers the queued deployment (`trigger: rollback`, `rollbackOf`).',
    permission: 'hosting.deploy',
    risk: 'critical',
    input: Type.Object({ appId, deploymentId }, { additionalProperties: false }),
    output: Deployment,
    run: async (c, input) => {
      const app = await c.services.hosting.apps.get(c.projectId, input.appId, 'container')
      return await c.services.hosting.deployments.rollback(app, input.deploymentId, c.caller.userId)
    }
  }
]
