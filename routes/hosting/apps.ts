import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { AppParams, CreateAppBody, CreateStaticAppBody, GitSourceBody, HostingResponses, ProjectHostingParams, ScalingBody } from '../../schemas/hosting.js'
import { createdAt } from '../location.js'

/** Container apps (`/apps`) and static apps (`/static-apps`): create, list, get, delete; suspend, resume and scale container apps. */
const appRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { apps, sources } = app.hosting
  const tags = ['hosting']
  const GIT_SOURCE = 'Needs `hosting.manage`. `repositoryId` (or this server\'s clone URL as `url`) names one of the project\'s repositories; with `autoDeploy` (the default for those) every push to `branch` deploys its new head. An external `url` must be https and deploys on request only; a host that resolves to an internal address (loopback, private, link-local, unique-local…) is 400 `APP_HOSTING_GIT_SOURCE_FORBIDDEN` unless the operator allows it (`HOSTING_GIT_ALLOWED_HOSTS`). Setting the source again resumes an auto-deploy a rollback paused.'

  app.get('/apps', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('hosting.read'),
    schema: { operationId: 'listHostingApps', tags, summary: 'The project\'s container apps', description: 'Needs `hosting.read`. Each with its current deployment and instances.', params: ProjectHostingParams, response: HostingResponses.appList }
  }, async (request) => ({ success: true as const, data: await Promise.all((await apps.list(request.params.projectId, 'container')).map(async (record) => await apps.view(record))) }))

  app.post('/apps', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('hosting.manage'),
    schema: { operationId: 'createHostingApp', tags, summary: 'Create a container app', description: 'Needs `hosting.manage`. The name is the app\'s hostname under the server\'s apps domain, so it is unique on the server (409 `APP_HOSTING_NAME_TAKEN`). Scaling defaults to one instance; nothing runs until a deployment goes live.', params: ProjectHostingParams, body: CreateAppBody, response: HostingResponses.appCreated }
  }, async (request, reply) => {
    const record = await apps.create(request.params.projectId, 'container', request.body)
    return reply.code(201).header('location', createdAt(request, record._id)).send({ success: true as const, data: await apps.view(record) })
  })

  app.get('/apps/:appId', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('hosting.read'),
    schema: { operationId: 'getHostingApp', tags, summary: 'One container app with its current deployment and instances', description: 'Needs `hosting.read`.', params: AppParams, response: HostingResponses.app }
  }, async (request) => ({ success: true as const, data: await apps.view(await apps.get(request.params.projectId, request.params.appId, 'container')) }))

  app.delete('/apps/:appId', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('hosting.manage'),
    schema: { operationId: 'deleteHostingApp', tags, summary: 'Delete a container app: stop its instances and remove its artifacts, secrets and logs', description: 'Needs `hosting.manage`. The gateway stops answering for it at once.', params: AppParams, response: HostingResponses.deleted }
  }, async (request) => {
    await apps.delete(await apps.get(request.params.projectId, request.params.appId, 'container'))
    return { success: true as const, data: { id: request.params.appId, deleted: true as const } }
  })

  app.post('/apps/:appId/suspend', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('hosting.deploy'),
    schema: { operationId: 'suspendHostingApp', tags, summary: 'Suspend an app: the gateway answers 503 and its instances stop', description: 'Needs `hosting.deploy`. 409 `APP_HOSTING_SUSPENDED` when it already is.', params: AppParams, response: HostingResponses.app }
  }, async (request) => {
    const record = await apps.get(request.params.projectId, request.params.appId, 'container')
    return { success: true as const, data: await apps.view(await apps.suspend(record)) }
  })

  app.post('/apps/:appId/unsuspend', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('hosting.deploy'),
    schema: { operationId: 'unsuspendHostingApp', tags, summary: 'Resume a suspended app: its live deployment starts again, without a build', description: 'Needs `hosting.deploy`. The instances start in the background; the gateway routes to them once healthy. The answer gives the state the app is in now: `deploying` while its live deployment starts again (`created` before any). 409 `APP_HOSTING_NOT_SUSPENDED` when it is not suspended.', params: AppParams, response: HostingResponses.app }
  }, async (request) => {
    const record = await apps.get(request.params.projectId, request.params.appId, 'container')
    return { success: true as const, data: await apps.view(await apps.unsuspend(record)) }
  })

  app.put('/apps/:appId/scaling', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('hosting.manage'),
    schema: { operationId: 'scaleHostingApp', tags, summary: 'Set how many instances the live deployment runs', description: 'Needs `hosting.manage`. No build: instances of the live deployment start (health-gated) or stop in the background. `instances` alone sets the count: `min` and `max`, when left out, widen to take it; when given, `instances` must lie within them (400 `APP_HOSTING_SCALING_INVALID`).', params: AppParams, body: ScalingBody, response: HostingResponses.app }
  }, async (request) => {
    const record = await apps.get(request.params.projectId, request.params.appId, 'container')
    return { success: true as const, data: await apps.view(await apps.scale(record, request.body)) }
  })

  app.put('/apps/:appId/git-source', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('hosting.manage'),
    schema: { operationId: 'setHostingAppGitSource', tags, summary: 'Deploy a container app from a git repository: this server\'s own or an external https one', description: GIT_SOURCE, params: AppParams, body: GitSourceBody, response: HostingResponses.app }
  }, async (request) => {
    const record = await apps.get(request.params.projectId, request.params.appId, 'container')
    return { success: true as const, data: await apps.view(await apps.setGitSource(record, await sources.gitSource(record, request.body))) }
  })

  app.put('/static-apps/:appId/git-source', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('hosting.manage'),
    schema: { operationId: 'setStaticAppGitSource', tags, summary: 'Deploy a static app from a git repository: this server\'s own or an external https one', description: GIT_SOURCE, params: AppParams, body: GitSourceBody, response: HostingResponses.staticApp }
  }, async (request) => {
    const record = await apps.get(request.params.projectId, request.params.appId, 'static')
    return { success: true as const, data: await apps.staticView(await apps.setGitSource(record, await sources.gitSource(record, request.body))) }
  })

  app.post('/static-apps', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('hosting.manage'),
    schema: { operationId: 'createStaticApp', tags, summary: 'Create a static app, served by the gateway from its live deployment\'s tree', description: 'Needs `hosting.manage`. Names share the container apps\' name space (409 `APP_HOSTING_NAME_TAKEN`).', params: ProjectHostingParams, body: CreateStaticAppBody, response: HostingResponses.staticCreated }
  }, async (request, reply) => {
    const record = await apps.create(request.params.projectId, 'static', request.body)
    return reply.code(201).header('location', createdAt(request, record._id)).send({ success: true as const, data: await apps.staticView(record) })
  })

  app.get('/static-apps', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('hosting.read'),
    schema: { operationId: 'listStaticApps', tags, summary: 'The project\'s static apps', description: 'Needs `hosting.read`.', params: ProjectHostingParams, response: HostingResponses.staticList }
  }, async (request) => ({ success: true as const, data: await Promise.all((await apps.list(request.params.projectId, 'static')).map(async (record) => await apps.staticView(record))) }))

  app.get('/static-apps/:appId', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('hosting.read'),
    schema: { operationId: 'getStaticApp', tags, summary: 'One static app with its current deployment', description: 'Needs `hosting.read`.', params: AppParams, response: HostingResponses.staticApp }
  }, async (request) => ({ success: true as const, data: await apps.staticView(await apps.get(request.params.projectId, request.params.appId, 'static')) }))

  app.delete('/static-apps/:appId', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('hosting.manage'),
    schema: { operationId: 'deleteStaticApp', tags, summary: 'Delete a static app and its deployed trees', description: 'Needs `hosting.manage`. The gateway stops answering for it at once.', params: AppParams, response: HostingResponses.deleted }
  }, async (request) => {
    await apps.delete(await apps.get(request.params.projectId, request.params.appId, 'static'))
    return { success: true as const, data: { id: request.params.appId, deleted: true as const } }
  })
}

export default appRoutes
