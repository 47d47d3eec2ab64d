import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { AppParams, DeploymentParams, DeployFromGitBody, DeployFromUploadBody, HostingResponses, HOSTING_LIMITS, ListDeploymentsQuery } from '../../schemas/hosting.js'
import type { AppKind } from '../../services/hosting/records.js'
import { deploymentView } from '../../services/hosting/deployments.js'
import { platformCaller } from '../../plugins/auth.js'

/**
 * What container apps and static apps share, mounted under `/apps` and
 * `/static-apps`: deployments from an upload or from git,
 * and the deployments' list, cancel and rollback.
 */
const deploymentRoutes: FastifyPluginAsyncTypebox<{ kind: AppKind }> = async (app, { kind }) => {
  const { apps, deployments, sources } = app.hosting
  const tags = ['hosting']
  const what = kind === 'static' ? 'StaticApp' : 'HostingApp'
  const find = async (params: { projectId: string, appId: string }) => await apps.get(params.projectId, params.appId, kind)
  const deploymentUrl = (params: { projectId: string, appId: string }, id: string): string =>
    `/api/projects/${params.projectId}/backend/${kind === 'static' ? 'static-apps' : 'apps'}/${params.appId}/deployments/${id}`

  app.post('/:appId/deployments', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('hosting.deploy'),
    schema: { operationId: `deploy${what}FromUpload`, tags, summary: 'Deploy a completed source upload', description: 'Needs `hosting.deploy`. The deployment is queued (202) and runs after the app\'s earlier ones: build, start health-gated instances, switch the gateway, stop the previous deployment. 409 `APP_HOSTING_UPLOAD_NOT_COMPLETED` for an upload not completed.', params: AppParams, body: DeployFromUploadBody, response: HostingResponses.deploymentCreated }
  }, async (request, reply) => {
    const deployment = await sources.deployUpload(await find(request.params), request.body.uploadId, platformCaller(request).userId)
    return reply.code(202).header('location', deploymentUrl(request.params, deployment.id)).send({ success: true as const, data: deployment })
  })

  app.post('/:appId/deployments/from-git', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('hosting.deploy'),
    schema: { operationId: `deploy${what}FromGit`, tags, summary: 'Deploy the git source\'s branch, or another ref', description: 'Needs `hosting.deploy`. 409 `APP_HOSTING_NO_GIT_SOURCE` without a git source; a ref the repository does not have is 404 `APP_GIT_REF_NOT_FOUND`.', params: AppParams, body: DeployFromGitBody, response: HostingResponses.deploymentCreated }
  }, async (request, reply) => {
    const deployment = await sources.deployGit(await find(request.params), request.body.ref, 'api', platformCaller(request).userId)
    return reply.code(202).header('location', deploymentUrl(request.params, deployment.id)).send({ success: true as const, data: deployment })
  })

  app.get('/:appId/deployments', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('hosting.read'),
    schema: { operationId: `list${what}Deployments`, tags, summary: 'The app\'s deployments, newest first', description: `Needs \`hosting.read\`. At most ${HOSTING_LIMITS.deploymentsPageMax}.`, params: AppParams, querystring: ListDeploymentsQuery, response: HostingResponses.deploymentList }
  }, async (request) => {
    const record = await find(request.params)
    return { success: true as const, data: await deployments.list(record._id, request.query.limit ?? 20) }
  })

  app.get('/:appId/deployments/:deploymentId', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('hosting.read'),
    schema: { operationId: `get${what}Deployment`, tags, summary: 'One deployment: its state, reason, source and artifact', description: 'Needs `hosting.read`.', params: DeploymentParams, response: HostingResponses.deployment }
  }, async (request) => {
    const record = await find(request.params)
    return { success: true as const, data: deploymentView(await deployments.find(record._id, request.params.deploymentId)) }
  })

  app.post('/:appId/deployments/:deploymentId/cancel', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('hosting.deploy'),
    schema: { operationId: `cancel${what}Deployment`, tags, summary: 'Cancel a deployment that has not gone live', description: 'Needs `hosting.deploy`. A queued one is canceled at once; a build or release stops at its next step. 409 `APP_HOSTING_DEPLOYMENT_FINISHED` once it ended.', params: DeploymentParams, response: HostingResponses.deployment }
  }, async (request) => ({ success: true as const, data: await deployments.cancel(await find(request.params), request.params.deploymentId) }))

  app.post('/:appId/deployments/:deploymentId/rollback', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('hosting.deploy'),
    schema: { operationId: `rollback${what}Deployment`, tags, summary: 'Deploy an earlier deployment\'s artifact again, without a build', description: 'Needs `hosting.deploy`. Queues a new deployment (`trigger: rollback`, `rollbackOf`) of that artifact and pauses git auto-deploy. 409 `APP_HOSTING_NO_ARTIFACT` for a deployment that never built.', params: DeploymentParams, response: HostingResponses.deploymentCreated }
  }, async (request, reply) => {
    const deployment = await deployments.rollback(await find(request.params), request.params.deploymentId, platformCaller(request).userId)
    return reply.code(202).header('location', deploymentUrl(request.params, deployment.id)).send({ success: true as const, data: deployment })
  })
}

export default deploymentRoutes
