import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import {
  AppParams, CreateAppBody, CreateStaticAppBody, GitSourceBody, HostingResponses, ProjectHostingParams, ScalingBody
} from '../../schemas/hosting.js'
import { hostingErrors as e } from '../../services/hosting/errors.js'
import { created, deleted, ok } from '../replies.js'

/** What setting a git source may meet. */
const GIT_SOURCE = [e.gitSourceInvalid, e.gitSourceForbidden, e.subdirectoryInvalid]
const GIT_SOURCE_TEXT = '`repositoryId` (or this server\'s clone URL as `url`) names one of the project\'s repositories; ' +
  'with `autoDeploy` (the default for those) every push to `branch` deploys its new head. ' +
  'An external `url` must be https and deploys on request only; a host that resolves to an internal address ' +
  '(loopback, private, link-local, unique-local…) is refused unless the operator allows it (`HOSTING_GIT_ALLOWED_HOSTS`). ' +
  'Setting the source again resumes an auto-deploy a rollback paused.'

/** Container apps (`/apps`) and static apps (`/static-apps`): create, list, get, delete; suspend, resume and scale container apps. */
const appRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { apps, sources } = app.hosting
  const tags = ['hosting']

  app.get('/apps', {
    config: { permission: 'hosting.read' },
    schema: {
      operationId: 'listHostingApps',
      tags,
      summary: 'The project\'s container apps',
      description: 'Each with its current deployment and instances.',
      params: ProjectHostingParams,
      response: HostingResponses.appList
    }
  }, async (request) => {
    const records = await apps.list(request.scope.project.id, 'container')
    return ok(await Promise.all(records.map(async (record) => await apps.view(record))))
  })

  app.post('/apps', {
    config: { permission: 'hosting.manage', errors: [e.nameTaken, e.scalingInvalid] },
    schema: {
      operationId: 'createHostingApp',
      tags,
      summary: 'Create a container app',
      description: 'The name is the app\'s hostname under the server\'s apps domain, so it is unique on the server. ' +
        'Scaling defaults to one instance; nothing runs until a deployment goes live.',
      params: ProjectHostingParams,
      body: CreateAppBody,
      response: HostingResponses.appCreated
    }
  }, async (request, reply) => {
    const record = await apps.create(request.scope.project.id, 'container', request.body)
    return created(reply, await apps.view(record))
  })

  app.get('/apps/:appId', {
    config: { permission: 'hosting.read', parent: 'app' },
    schema: {
      operationId: 'getHostingApp',
      tags,
      summary: 'One container app with its current deployment and instances',
      params: AppParams,
      response: HostingResponses.app
    }
  }, async (request) => ok(await apps.view(request.scope.app)))

  app.delete('/apps/:appId', {
    config: { permission: 'hosting.manage', parent: 'app' },
    schema: {
      operationId: 'deleteHostingApp',
      tags,
      summary: 'Delete a container app: stop its instances and remove its artifacts, secrets and logs',
      description: 'The gateway stops answering for it at once.',
      params: AppParams,
      response: HostingResponses.deleted
    }
  }, async (request) => {
    await apps.delete(request.scope.app)
    return deleted(request.scope.app._id)
  })

  app.post('/apps/:appId/suspend', {
    config: { permission: 'hosting.deploy', parent: 'app', errors: [e.suspended] },
    schema: {
      operationId: 'suspendHostingApp',
      tags,
      summary: 'Suspend an app: the gateway answers 503 and its instances stop',
      params: AppParams,
      response: HostingResponses.app
    }
  }, async (request) => ok(await apps.view(await apps.suspend(request.scope.app))))

  app.post('/apps/:appId/unsuspend', {
    config: { permission: 'hosting.deploy', parent: 'app', errors: [e.notSuspended] },
    schema: {
      operationId: 'unsuspendHostingApp',
      tags,
      summary: 'Resume a suspended app: its live deployment starts again, without a build',
      description: 'The instances start in the background; the gateway routes to them once healthy. ' +
        'The answer gives the state the app is in now: `deploying` while its live deployment starts again (`created` before any).',
      params: AppParams,
      response: HostingResponses.app
    }
  }, async (request) => ok(await apps.view(await apps.unsuspend(request.scope.app))))

  app.put('/apps/:appId/scaling', {
    config: { permission: 'hosting.manage', parent: 'app', errors: [e.scalingInvalid] },
    schema: {
      operationId: 'scaleHostingApp',
      tags,
      summary: 'Set how many instances the live deployment runs',
      description: 'No build: instances of the live deployment start (health-gated) or stop in the background. ' +
        '`instances` alone sets the count: `min` and `max`, when left out, widen to take it; when given, `instances` must lie within them.',
      params: AppParams,
      body: ScalingBody,
      response: HostingResponses.app
    }
  }, async (request) => ok(await apps.view(await apps.scale(request.scope.app, request.body))))

  app.put('/apps/:appId/git-source', {
    config: { permission: 'hosting.manage', parent: 'app', errors: GIT_SOURCE },
    schema: {
      operationId: 'setHostingAppGitSource',
      tags,
      summary: 'Deploy a container app from a git repository: this server\'s own or an external https one',
      description: GIT_SOURCE_TEXT,
      params: AppParams,
      body: GitSourceBody,
      response: HostingResponses.app
    }
  }, async (request) => {
    const record = request.scope.app
    return ok(await apps.view(await apps.setGitSource(record, await sources.gitSource(record, request.body))))
  })

  app.put('/static-apps/:appId/git-source', {
    config: { permission: 'hosting.manage', parent: 'staticApp', errors: GIT_SOURCE },
    schema: {
      operationId: 'setStaticAppGitSource',
      tags,
      summary: 'Deploy a static app from a git repository: this server\'s own or an external https one',
      description: GIT_SOURCE_TEXT,
      params: AppParams,
      body: GitSourceBody,
      response: HostingResponses.staticApp
    }
  }, async (request) => {
    const record = request.scope.staticApp
    return ok(await apps.staticView(await apps.setGitSource(record, await sources.gitSource(record, request.body))))
  })

  app.post('/static-apps', {
    config: { permission: 'hosting.manage', errors: [e.nameTaken] },
    schema: {
      operationId: 'createStaticApp',
      tags,
      summary: 'Create a static app, served by the gateway from its live deployment\'s tree',
      description: 'Names share the container apps\' name space.',
      params: ProjectHostingParams,
      body: CreateStaticAppBody,
      response: HostingResponses.staticCreated
    }
  }, async (request, reply) => {
    const record = await apps.create(request.scope.project.id, 'static', request.body)
    return created(reply, await apps.staticView(record))
  })

  app.get('/static-apps', {
    config: { permission: 'hosting.read' },
    schema: {
      operationId: 'listStaticApps',
      tags,
      summary: 'The project\'s static apps',
      params: ProjectHostingParams,
      response: HostingResponses.staticList
    }
  }, async (request) => {
    const records = await apps.list(request.scope.project.id, 'static')
    return ok(await Promise.all(records.map(async (record) => await apps.staticView(record))))
  })

  app.get('/static-apps/:appId', {
    config: { permission: 'hosting.read', parent: 'staticApp' },
    schema: {
      operationId: 'getStaticApp',
      tags,
      summary: 'One static app with its current deployment',
      params: AppParams,
      response: HostingResponses.staticApp
    }
  }, async (request) => ok(await apps.staticView(request.scope.staticApp)))

  app.delete('/static-apps/:appId', {
    config: { permission: 'hosting.manage', parent: 'staticApp' },
    schema: {
      operationId: 'deleteStaticApp',
      tags,
      summary: 'Delete a static app and its deployed trees',
      description: 'The gateway stops answering for it at once.',
      params: AppParams,
      response: HostingResponses.deleted
    }
  }, async (request) => {
    await apps.delete(request.scope.staticApp)
    return deleted(request.scope.staticApp._id)
  })
}

export default appRoutes
