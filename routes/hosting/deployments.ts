import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import {
  AppParams, DeploymentParams, DeployFromGitBody, DeployFromUploadBody, HostingResponses, HOSTING_LIMITS, ListDeploymentsQuery
} from '../../schemas/hosting.js'
import { fileErrors as f } from '../../services/files/errors.js'
import { gitErrors } from '../../services/git/errors.js'
import { hostingErrors as e } from '../../services/hosting/errors.js'
import type { AppKind } from '../../services/hosting/records.js'
import { deploymentView } from '../../services/hosting/deployments.js'
import { appParent } from '../../plugins/hosting.js'
import { accepted, ok } from '../replies.js'

const QUEUED = 'The deployment is queued (202) and runs after the app\'s earlier ones: ' +
  'build, start health-gated instances, switch the gateway, stop the previous deployment. Location names it.'

/**
 * What container apps and static apps share, mounted under `/apps` and
 * `/static-apps`: deployments from an upload or from git,
 * and the deployments' list, cancel and rollback.
 */
const deploymentRoutes: FastifyPluginAsyncTypebox<{ kind: AppKind }> = async (app, { kind }) => {
  const { deployments, sources } = app.hosting
  const tags = ['hosting']
  const what = kind === 'static' ? 'StaticApp' : 'HostingApp'
  const parent = appParent(kind)
  app.routeDefaults({ parent })

  app.post('/:appId/deployments', {
    config: {
      permission: 'hosting.deploy',
      errors: [e.uploadNotCompleted, f.uploadSessionNotFound, f.uploadSessionExpired, f.uploadSessionAborted]
    },
    schema: {
      operationId: `deploy${what}FromUpload`,
      tags,
      summary: 'Deploy a completed source upload',
      description: QUEUED,
      params: AppParams,
      body: DeployFromUploadBody,
      response: HostingResponses.deploymentCreated
    }
  }, async (request, reply) => {
    const deployment = await sources.deployUpload(request.scope[parent], request.body.uploadId, request.caller.user.userId)
    return accepted(reply, deployment)
  })

  app.post('/:appId/deployments/from-git', {
    config: {
      permission: 'hosting.deploy',
      errors: [e.noGitSource, e.gitSourceGone, e.gitSourceInvalid, gitErrors.refNotFound, gitErrors.ambiguousRef]
    },
    schema: {
      operationId: `deploy${what}FromGit`,
      tags,
      summary: 'Deploy the git source\'s branch, or another ref',
      description: `${QUEUED} An external repository deploys its branch only.`,
      params: AppParams,
      body: DeployFromGitBody,
      response: HostingResponses.deploymentCreated
    }
  }, async (request, reply) => {
    const deployment = await sources.deployGit(request.scope[parent], request.body.ref, 'api', request.caller.user.userId)
    return accepted(reply, deployment, { fromAction: true })
  })

  app.get('/:appId/deployments', {
    config: { permission: 'hosting.read' },
    schema: {
      operationId: `list${what}Deployments`,
      tags,
      summary: 'The app\'s deployments, newest first',
      description: `At most ${HOSTING_LIMITS.deploymentsPageMax}.`,
      params: AppParams,
      querystring: ListDeploymentsQuery,
      response: HostingResponses.deploymentList
    }
  }, async (request) => ok(await deployments.list(request.scope[parent]._id, request.query.limit ?? 20)))

  app.get('/:appId/deployments/:deploymentId', {
    config: { permission: 'hosting.read', errors: [e.deploymentNotFound] },
    schema: {
      operationId: `get${what}Deployment`,
      tags,
      summary: 'One deployment: its state, reason, source and artifact',
      params: DeploymentParams,
      response: HostingResponses.deployment
    }
  }, async (request) => ok(deploymentView(await deployments.find(request.scope[parent]._id, request.params.deploymentId))))

  app.post('/:appId/deployments/:deploymentId/cancel', {
    config: { permission: 'hosting.deploy', errors: [e.deploymentNotFound, e.deploymentFinished] },
    schema: {
      operationId: `cancel${what}Deployment`,
      tags,
      summary: 'Cancel a deployment that has not gone live',
      description: 'A queued one is canceled at once; a build or release stops at its next step.',
      params: DeploymentParams,
      response: HostingResponses.deployment
    }
  }, async (request) => ok(await deployments.cancel(request.scope[parent], request.params.deploymentId)))

  app.post('/:appId/deployments/:deploymentId/rollback', {
    config: { permission: 'hosting.deploy', errors: [e.deploymentNotFound, e.noArtifact] },
    schema: {
      operationId: `rollback${what}Deployment`,
      tags,
      summary: 'Deploy an earlier deployment\'s artifact again, without a build',
      description: 'Queues a new deployment (`trigger: rollback`, `rollbackOf`) of that artifact and pauses git auto-deploy. ' +
        'Location names it.',
      params: DeploymentParams,
      response: HostingResponses.deploymentCreated
    }
  }, async (request, reply) => {
    const deployment = await deployments.rollback(request.scope[parent], request.params.deploymentId, request.caller.user.userId)
    return accepted(reply, deployment, { fromAction: 'onMember' })
  })
}

export default deploymentRoutes
