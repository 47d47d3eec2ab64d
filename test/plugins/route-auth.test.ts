import t from 'tap'
import { parse } from 'yaml'
import { Type } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../../app.js'
import { buildTestApp, call, orgWithRoles, testConfig } from '../helper.js'
import { Envelope } from '../../schemas/envelope.js'
import { dnsErrors } from '../../services/dns/errors.js'
import { renderOpenApi } from '../../scripts/openapi.js'
import { ROUTE_AUTH_KINDS } from '../../plugins/route-auth.js'

t.test('a route under /api that does not say how it authenticates stops the app from starting', async (t) => {
  const app = await buildApp(testConfig(t))
  t.teardown(() => app.close())
  t.throws(() => app.get('/api/forgotten', async () => ({ success: true, data: null })), /GET \/api\/forgotten: declare how it authenticates with config\.auth/)
})

t.test('an unknown kind is refused too', async (t) => {
  const app = await buildApp(testConfig(t))
  t.teardown(() => app.close())
  t.throws(() => app.get('/api/misspelt', { config: { auth: 'platfrom' as 'platform' } }, async () => ({ success: true, data: null })), /unknown config\.auth 'platfrom'/)
})

t.test('the declared kind is what the contract says: security and its refusals, on every operation', async (t) => {
  const document = parse(await renderOpenApi())
  const schemes = Object.keys(document.components.securitySchemes)
  t.same(schemes, ['platformToken', 'projectUserToken', 'serviceToken'], 'three schemes a client can tell apart')
  for (const scheme of Object.values<{ description: string, bearerFormat: string }>(document.components.securitySchemes)) {
    t.ok(scheme.description.length > 0 && scheme.bearerFormat.length > 0, 'each says what its token is')
  }
  for (const [path, item] of Object.entries<Record<string, any>>(document.paths)) {
    for (const [method, operation] of Object.entries<any>(item)) {
      t.ok(Array.isArray(operation.security), `${method} ${path}: security is stated ([] when public)`)
      if (operation.security.length > 0 && !operation.security.some((requirement: object) => Object.keys(requirement).length === 0)) {
        t.ok(operation.responses['401'], `${method} ${path}: a route that needs a credential declares 401`)
      }
    }
  }
  t.ok(ROUTE_AUTH_KINDS.includes('none') && ROUTE_AUTH_KINDS.includes('data'))
})

/** Probe routes under a folder that sets defaults, as a family's route plugin does. */
async function probes (app: FastifyInstance): Promise<void> {
  await app.register(async (folder) => {
    folder.routeDefaults({ auth: 'platform', parent: 'project' })
    const params = Type.Object({ projectId: Type.String(), zoneId: Type.String() })
    const reply = { 200: Envelope(Type.Object({ project: Type.String(), zone: Type.String(), holds: Type.Boolean() })) }
    await folder.register(async (nested) => {
      nested.get('/zones/:zoneId', {
        config: { permission: 'dns.manage', parent: 'zone', errors: [dnsErrors.providerFailed] },
        schema: { operationId: 'probeZone', tags: ['dns'], summary: 'A probe', description: 'Reads its parents.', params, response: reply }
      }, async (request) => ({ success: true as const, data: { project: request.scope.project.id, zone: request.scope.zone.name, holds: request.scope.permissions.has('dns.manage') } }))
      nested.get('/misread/:zoneId', {
        config: { permission: 'dns.read' },
        schema: { operationId: 'probeMisread', tags: ['dns'], summary: 'A probe', params, response: reply }
      }, async (request) => ({ success: true as const, data: { project: request.scope.project.id, zone: request.scope.zone.name, holds: true } }))
      nested.get('/caller/:zoneId', {
        config: { permission: 'dns.read' },
        schema: { operationId: 'probeCaller', tags: ['dns'], summary: 'A probe', params, response: reply }
      }, async (request) => ({ success: true as const, data: { project: request.caller.user.userId, zone: request.caller.data.kind, holds: true } }))
      nested.get('/open', { config: { auth: 'none', parent: undefined }, schema: { operationId: 'probeOpen', tags: ['dns'], summary: 'A probe', response: { 200: Envelope(Type.Null()) } } }, async () => ({ success: true as const, data: null }))
    })
  }, { prefix: '/api/projects/:projectId/probe' })
}

t.test('a route\'s declaration writes its contract: Needs, what refuses it, and those statuses', async (t) => {
  const app = await buildTestApp(t, { extra: probes })
  const document = app.swagger() as { paths: Record<string, Record<string, any>> }
  const zone = document.paths['/api/projects/{projectId}/probe/zones/{zoneId}'].get
  t.equal(zone.description, [
    'Needs `dns.manage`. Reads its parents.',
    '',
    'Refused with:',
    '- 403 `APP_FORBIDDEN`: the caller lacks the permission this needs, named in `details.permission`, or the method\'s rule refuses it',
    '- 404 `APP_DNS_ZONE_NOT_FOUND`: no such zone in the project',
    '- 404 `APP_PROJECT_NOT_FOUND`: no such project, or the caller is not a member of its organization',
    '- 502 `APP_DNS_PROVIDER_FAILED`: the zone\'s provider could not be reached or refused; the message says why'
  ].join('\n'), 'the parents\' and the permission\'s codes with the route\'s own, by status')
  for (const status of ['401', '403', '404', '502']) t.ok(zone.responses[status], `${status} is declared`)
  t.same(zone.security, [{ platformToken: [] }], 'auth came from the folder\'s defaults')
  t.same(document.paths['/api/projects/{projectId}/probe/open'].get.security, [], 'a route overrides a default')
  t.notOk(document.paths['/api/projects/{projectId}/probe/open'].get.description, 'and without a parent or codes it gets no generated text')
})

t.test('a declaration that cannot hold stops the app from starting', async (t) => {
  const cases: Array<[string, (app: FastifyInstance) => void, RegExp]> = [
    ['a permission without a parent', (app) => app.get('/api/x', { config: { auth: 'platform', permission: 'dns.read' } }, async () => null), /config\.permission needs config\.parent/],
    ['an unknown parent', (app) => app.get('/api/x', { config: { auth: 'platform', parent: 'nowhere' as 'project' } }, async () => null), /unknown parent 'nowhere'/],
    ['"Needs" by hand', (app) => app.get('/api/projects/:projectId/x', { config: { auth: 'platform', parent: 'project', permission: 'dns.read' }, schema: { description: 'Needs `dns.read`.' } }, async () => null), /"Needs" sentence is written from config\.permission/],
    ['a code by hand', (app) => app.get('/api/projects/:projectId/x', { config: { auth: 'platform', parent: 'project', errors: [dnsErrors.zoneExists] }, schema: { description: 'Refused with 409 `APP_DNS_ZONE_EXISTS`.' } }, async () => null), /name no codes in the description/]
  ]
  const app = await buildApp(testConfig(t))
  t.teardown(() => app.close())
  for (const [name, add, refusal] of cases) t.throws(() => add(app), refusal, name)
})

t.test('the scope: outsiders get 404, members without the permission 403 before the parent is looked for, the caller is typed', async (t) => {
  const app = await buildTestApp(t, { extra: probes })
  const { owner, viewer, outsider, orgId } = await orgWithRoles(app)
  const projectId = (await call(app, 'POST', '/api/projects', owner.auth, { orgId, name: 'Site' })).body.data.id as string
  const zoneId = (await call(app, 'POST', `/api/projects/${projectId}/dns/zones`, owner.auth, { name: 'example.com' })).body.data.id as string
  const base = `/api/projects/${projectId}/probe`
  const cases: Array<[string, Record<string, string>, string, number, string | null]> = [
    ['an outsider', outsider.auth, `${base}/zones/${zoneId}`, 404, 'APP_PROJECT_NOT_FOUND'],
    ['an outsider, a project that does not exist', outsider.auth, '/api/projects/nope/probe/zones/x', 404, 'APP_PROJECT_NOT_FOUND'],
    ['a viewer, an existing zone', viewer.auth, `${base}/zones/${zoneId}`, 403, 'APP_FORBIDDEN'],
    ['a viewer, a zone that does not exist: the same answer', viewer.auth, `${base}/zones/nozone`, 403, 'APP_FORBIDDEN'],
    ['the owner, a zone that does not exist', owner.auth, `${base}/zones/nozone`, 404, 'APP_DNS_ZONE_NOT_FOUND'],
    ['the owner', owner.auth, `${base}/zones/${zoneId}`, 200, null],
    ['a handler reading a parent its route did not declare', owner.auth, `${base}/misread/${zoneId}`, 500, 'APP_INTERNAL'],
    ['a handler reading a caller its auth does not give', owner.auth, `${base}/caller/${zoneId}`, 500, 'APP_INTERNAL']
  ]
  for (const [name, headers, url, status, code] of cases) {
    const res = await call(app, 'GET', url, headers)
    t.same([res.status, res.body.code ?? null], [status, code], name)
    if (status === 403) t.same(res.body.details, { permission: 'dns.manage' }, `${name}: the permission is named`)
  }
  t.same((await call(app, 'GET', `${base}/zones/${zoneId}`, owner.auth)).body.data, { project: projectId, zone: 'example.com', holds: true })
})
