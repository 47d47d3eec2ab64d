import t from 'tap'
import { trackerSetup } from '../tracker/fixtures.js'
import { deploymentSettled, packFixture, uploadSource } from '../hosting/fixtures.js'
import { mcpClient, refusalOf } from './mcp-client.js'

t.test('hosting redeploy and rollback over MCP with the SDK client answer what their routes answer, and refuse as they refuse', async (t) => {
  const s = await trackerSetup(t, { GATEWAY_PORT: '0' })
  await s.app.listen({ port: 0, host: '127.0.0.1' })
  const project = `/api/projects/${s.projectId}`
  const hosted = await s.must('POST', `${project}/backend/apps`, s.owner.auth, { name: 'hello', healthCheckPath: '/healthz' })
  const appUrl = `${project}/backend/apps/${hosted.id as string}`
  const uploadId = await uploadSource(s.app, appUrl, s.owner.auth, packFixture(t, 'node-hello'))
  const first = await deploymentSettled(s.app, appUrl, s.owner.auth, (await s.must('POST', `${appUrl}/deployments`, s.owner.auth, { uploadId })).id)
  t.match(first, { state: 'live', artifactId: String })
  const member = await mcpClient(t, s, s.member.token)
  const viewer = await mcpClient(t, s, s.viewer.token)
  const restCode = async (path: string, auth: Record<string, string>, body?: unknown): Promise<string> => (await s.api('POST', `${appUrl}${path}`, auth, body)).body.code as string
  // What two deployments of the same request share: all but their own id, dates and state as it moves on.
  const comparable = ({ id: _id, createdAt: _c, updatedAt: _u, startedAt: _s, finishedAt: _f, state: _state, reason: _r, ...rest }: any) => rest

  // Rollback: the tool's deployment is the route's, of the same artifact, without a build.
  const rolled = await member.call('hosting_deployment_rollback', { appId: hosted.id, deploymentId: first.id })
  t.notOk(rolled.isError, JSON.stringify(rolled.content))
  t.match(rolled.structuredContent, { trigger: 'rollback', rollbackOf: first.id, artifactId: first.artifactId, createdBy: s.member.id })
  const restRolled = await s.must('POST', `${appUrl}/deployments/${first.id}/rollback`, s.member.auth)
  t.same(comparable(rolled.structuredContent), comparable(restRolled))
  // Neither needs to go live here (the hosting suite covers that): cancelled, they free the app for the next.
  for (const id of [restRolled.id, rolled.structuredContent.id]) await s.api('POST', `${appUrl}/deployments/${id as string}/cancel`, s.owner.auth)

  // Redeploy from git: refused as the route refuses until the app has a git source, then the route's deployment.
  t.equal(refusalOf(await member.call('hosting_app_redeploy', { appId: hosted.id })).code, await restCode('/deployments/from-git', s.member.auth, {}))
  t.equal(refusalOf(await member.call('hosting_app_redeploy', { appId: hosted.id })).code, 'APP_HOSTING_NO_GIT_SOURCE')
  const repo = await s.must('POST', `${project}/git/repositories`, s.owner.auth, { name: 'Hello', slug: 'hello', readme: true })
  await s.must('PUT', `${appUrl}/git-source`, s.owner.auth, { repositoryId: repo.id, autoDeploy: false })
  const redeployed = await member.call('hosting_app_redeploy', { appId: hosted.id, deploy: { ref: 'main' } })
  t.notOk(redeployed.isError, JSON.stringify(redeployed.content))
  t.match(redeployed.structuredContent, { trigger: 'api', source: { type: 'git', repositoryId: repo.id, branch: 'main', commit: String }, createdBy: s.member.id })
  const restRedeployed = await s.must('POST', `${appUrl}/deployments/from-git`, s.member.auth, { ref: 'main' })
  t.same(comparable(redeployed.structuredContent), comparable(restRedeployed))
  for (const id of [redeployed.structuredContent.id, restRedeployed.id]) await s.api('POST', `${appUrl}/deployments/${id as string}/cancel`, s.owner.auth)

  // Refusals for the same caller: the viewer lacks hosting.deploy; unknown things are the route's not-found.
  const refusals: Array<[string, typeof member, string, object, string, Record<string, string>, unknown]> = [
    ['a viewer redeploys', viewer, 'hosting_app_redeploy', { appId: hosted.id }, '/deployments/from-git', s.viewer.auth, {}],
    ['a viewer rolls back', viewer, 'hosting_deployment_rollback', { appId: hosted.id, deploymentId: first.id }, `/deployments/${first.id}/rollback`, s.viewer.auth, undefined],
    ['an unknown deployment', member, 'hosting_deployment_rollback', { appId: hosted.id, deploymentId: 'dep404' }, '/deployments/dep404/rollback', s.member.auth, undefined],
    ['an unknown ref', member, 'hosting_app_redeploy', { appId: hosted.id, deploy: { ref: 'nope' } }, '/deployments/from-git', s.member.auth, { ref: 'nope' }]
  ]
  for (const [name, client, tool, args, path, auth, body] of refusals) {
    const answer = await client.call(tool, args)
    t.equal(answer.isError, true, name)
    t.equal(refusalOf(answer).code, await restCode(path, auth, body), name)
  }
  t.match(refusalOf(await viewer.call('hosting_app_redeploy', { appId: hosted.id })), { code: 'APP_FORBIDDEN', details: { permission: 'hosting.deploy' } })
  const offered = await viewer.names()
  t.notOk(offered.includes('hosting_app_redeploy') || offered.includes('hosting_deployment_rollback'), 'the viewer is not offered them')
  const tools = (await member.client.listTools()).tools.filter((tool) => tool.name === 'hosting_app_redeploy' || tool.name === 'hosting_deployment_rollback')
  t.same(tools.map((tool) => [tool.annotations?.destructiveHint, tool._meta?.['plinth/risk'], tool._meta?.['plinth/permission']]), [[true, 'critical', 'hosting.deploy'], [true, 'critical', 'hosting.deploy']])
})
