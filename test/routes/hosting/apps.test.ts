import t from 'tap'
import { buildTestApp, call, orgWithRoles } from '../../helper.js'

t.test('apps: created, listed, read, scaled, suspended and deleted under hosting permissions', async (t) => {
  const app = await buildTestApp(t)
  const { owner, member, viewer, outsider, orgId } = await orgWithRoles(app)
  const projectId = (await call(app, 'POST', '/api/projects', owner.auth, { orgId, name: 'Shop' })).body.data.id as string
  const base = `/api/projects/${projectId}/backend`

  const refusals: Array<[string, Record<string, string>, unknown, number, string]> = [
    ['no credential', {}, { name: 'web' }, 401, 'APP_UNAUTHORIZED'],
    ['outsider', outsider.auth, { name: 'web' }, 404, 'APP_PROJECT_NOT_FOUND'],
    ['member without hosting.manage', member.auth, { name: 'web' }, 403, 'APP_FORBIDDEN'],
    ['viewer', viewer.auth, { name: 'web' }, 403, 'APP_FORBIDDEN'],
    ['bad name', owner.auth, { name: 'Web_App' }, 400, 'APP_VALIDATION_FAILED'],
    ['unknown field', owner.auth, { name: 'web', image: 'x' }, 400, 'APP_VALIDATION_FAILED'],
    ['instances above max', owner.auth, { name: 'web', scaling: { instances: 3, max: 2 } }, 400, 'APP_HOSTING_SCALING_INVALID'],
    ['min above max', owner.auth, { name: 'web', scaling: { instances: 1, min: 3, max: 2 } }, 400, 'APP_HOSTING_SCALING_INVALID']
  ]
  for (const [name, headers, payload, status, code] of refusals) {
    const res = await call(app, 'POST', `${base}/apps`, headers, payload)
    t.same([res.status, res.body.code], [status, code], name)
    if (status === 403) t.equal(res.body.details.permission, 'hosting.manage', `${name}: names the permission`)
  }

  const created = await call(app, 'POST', `${base}/apps`, owner.auth, { name: 'web', healthCheckPath: '/healthz' })
  t.equal(created.status, 201)
  t.match(created.body.data, { name: 'web', state: 'created', hostname: 'web.apps.localhost', scaling: { instances: 1, min: 1, max: 1 }, healthCheckPath: '/healthz', currentDeployment: null, instances: [], gitSource: null })
  const appId = created.body.data.id as string
  t.equal(created.headers.location, `${base}/apps/${appId}`)
  t.same([(await call(app, 'POST', `${base}/apps`, owner.auth, { name: 'web' })).body.code], ['APP_HOSTING_NAME_TAKEN'], 'a name is taken once on the server')
  t.same([(await call(app, 'POST', `${base}/static-apps`, owner.auth, { name: 'web' })).body.code], ['APP_HOSTING_NAME_TAKEN'], 'static apps share the name space')

  t.same((await call(app, 'GET', `${base}/apps`, viewer.auth)).body.data.map((one: { id: string }) => one.id), [appId], 'a viewer lists')
  t.equal((await call(app, 'GET', `${base}/apps/${appId}`, viewer.auth)).body.data.id, appId)
  t.same([(await call(app, 'GET', `${base}/apps/${appId}`, outsider.auth)).status], [404], 'an outsider sees nothing')
  t.same([(await call(app, 'GET', `${base}/static-apps/${appId}`, owner.auth)).body.code], ['APP_HOSTING_APP_NOT_FOUND'], 'a container app is no static app')
  t.same([(await call(app, 'GET', `${base}/apps/nope`, owner.auth)).body.code], ['APP_HOSTING_APP_NOT_FOUND'])

  // An instance count alone sets the count: the bounds left out widen to take it; bounds given are held to.
  const scalings: Array<[Record<string, number>, number, unknown]> = [
    [{ instances: 2 }, 200, { instances: 2, min: 1, max: 2 }],
    [{ instances: 3, max: 5 }, 200, { instances: 3, min: 1, max: 5 }],
    [{ instances: 4 }, 200, { instances: 4, min: 1, max: 5 }],
    [{ instances: 6 }, 200, { instances: 6, min: 1, max: 6 }],
    [{ instances: 0 }, 200, { instances: 0, min: 0, max: 6 }],
    [{ instances: 2, min: 2 }, 200, { instances: 2, min: 2, max: 6 }],
    [{ instances: 7, max: 5 }, 400, 'APP_HOSTING_SCALING_INVALID'],
    [{ instances: 1, min: 3 }, 400, 'APP_HOSTING_SCALING_INVALID'],
    [{ instances: 11 }, 400, 'APP_VALIDATION_FAILED']
  ]
  for (const [body, status, expected] of scalings) {
    const res = await call(app, 'PUT', `${base}/apps/${appId}/scaling`, owner.auth, body)
    t.same([res.status, status === 200 ? res.body.data.scaling : res.body.code], [status, expected], JSON.stringify(body))
  }
  t.same([(await call(app, 'PUT', `${base}/apps/${appId}/scaling`, member.auth, { instances: 2 })).status], [403])

  t.same([(await call(app, 'POST', `${base}/apps/${appId}/unsuspend`, member.auth)).body.code], ['APP_HOSTING_NOT_SUSPENDED'])
  const suspended = await call(app, 'POST', `${base}/apps/${appId}/suspend`, member.auth)
  t.same([suspended.status, suspended.body.data.state], [200, 'suspended'], 'a member may suspend')
  t.same([(await call(app, 'POST', `${base}/apps/${appId}/suspend`, member.auth)).body.code], ['APP_HOSTING_SUSPENDED'])
  t.same([(await call(app, 'POST', `${base}/apps/${appId}/suspend`, viewer.auth)).body.details.permission], ['hosting.deploy'])
  const resumed = await call(app, 'POST', `${base}/apps/${appId}/unsuspend`, member.auth)
  t.same([resumed.status, resumed.body.data.state], [200, 'created'], 'resumed before any deployment: the state it is in, not suspended')

  const timeline = await call(app, 'GET', `${base}/apps/${appId}/timeline`, viewer.auth)
  t.same(timeline.body.data.map((event: { type: string }) => event.type).filter((type: string) => type !== 'app.state'), ['unsuspended', 'suspended', ...scalings.filter(([, status]) => status === 200).map(() => 'scaled'), 'app.created'], 'the timeline, newest first')

  const site = await call(app, 'POST', `${base}/static-apps`, owner.auth, { name: 'docs', spaFallback: true })
  t.match([site.status, site.body.data], [201, { name: 'docs', hostname: 'docs.apps.localhost', spaFallback: true, currentDeployment: null }])
  t.same((await call(app, 'GET', `${base}/static-apps`, viewer.auth)).body.data.map((one: { name: string }) => one.name), ['docs'])
  t.same((await call(app, 'GET', `${base}/apps`, viewer.auth)).body.data.map((one: { name: string }) => one.name), ['web'], 'kinds are listed apart')

  t.same([(await call(app, 'DELETE', `${base}/apps/${appId}`, member.auth)).status], [403])
  t.same((await call(app, 'DELETE', `${base}/apps/${appId}`, owner.auth)).body.data, { id: appId, deleted: true })
  t.same([(await call(app, 'GET', `${base}/apps/${appId}`, owner.auth)).status], [404])
  t.equal((await call(app, 'DELETE', `${base}/static-apps/${site.body.data.id as string}`, owner.auth)).status, 200)
  t.equal((await call(app, 'POST', `${base}/apps`, owner.auth, { name: 'web' })).status, 201, 'the name is free again')

  await call(app, 'DELETE', `/api/projects/${projectId}`, owner.auth)
  t.equal(await app.hosting.apps.records.countDocuments({ projectId }), 0, 'a deleted project takes its apps')
})

t.test('with HOSTING_ENABLED off the family answers 404 APP_HOSTING_DISABLED', async (t) => {
  const app = await buildTestApp(t, { env: { HOSTING_ENABLED: 'false' } })
  const { owner, orgId } = await orgWithRoles(app)
  const projectId = (await call(app, 'POST', '/api/projects', owner.auth, { orgId, name: 'Off' })).body.data.id as string
  const res = await call(app, 'GET', `/api/projects/${projectId}/backend/apps`, owner.auth)
  t.same([res.status, res.body.code], [404, 'APP_HOSTING_DISABLED'])
})
