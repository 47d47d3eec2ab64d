import t from 'tap'
import { readFileSync } from 'node:fs'
import { parse } from 'yaml'
import { validate } from '@readme/openapi-parser'
import { OPENAPI_FILE, renderClientTypes, renderOpenApi, SDK_TYPES_FILE } from '../scripts/openapi.js'
import { buildTestApp } from './helper.js'

t.test('openapi.yaml is current and valid', async (t) => {
  const generated = await renderOpenApi()
  const committed = readFileSync(OPENAPI_FILE, 'utf8')
  t.equal(committed, generated, 'openapi.yaml is stale: run `npm run openapi` and commit it')
  const types = await renderClientTypes(generated)
  t.equal(readFileSync(SDK_TYPES_FILE, 'utf8'), types, 'the SDK\'s generated types are stale: run `npm run openapi` and commit them')

  const document = parse(generated)
  const result = await validate(structuredClone(document))
  t.ok(result.valid, `validates as OpenAPI 3.x: ${JSON.stringify(result.valid ? [] : result.errors).slice(0, 500)}`)
  t.match(document.openapi, /^3\./)
})

t.test('every operation is documented', async (t) => {
  const document = parse(await renderOpenApi())
  const tags = new Map<string, string>(document.tags.map((tag: { name: string, description: string }) => [tag.name, tag.description]))
  const seen = new Set<string>()
  for (const [path, item] of Object.entries<Record<string, any>>(document.paths)) {
    for (const [method, operation] of Object.entries<any>(item)) {
      const where = `${method.toUpperCase()} ${path}`
      t.match(operation.operationId, /^[a-z][A-Za-z0-9]+$/, `${where}: camelCase operationId`)
      t.notOk(seen.has(operation.operationId), `${where}: operationId unique`)
      seen.add(operation.operationId)
      t.ok(operation.summary, `${where}: summary`)
      t.ok(operation.description, `${where}: description`)
      t.ok(Array.isArray(operation.tags) && operation.tags.length > 0, `${where}: tags`)
      for (const tag of operation.tags ?? []) t.ok(tags.get(tag), `${where}: tag ${tag} is declared with a description`)
      t.ok(Array.isArray(operation.security), `${where}: security, [] when public`)
      t.notOk(path.endsWith('/') && path !== '/', `${where}: no trailing slash`)
      for (const [status, response] of Object.entries<any>(operation.responses)) {
        if (Number(status) >= 400 || status === 'default') t.match(response.$ref, /^#\/components\/responses\//, `${where} ${status}: the shared JSON error response`)
      }
      // A browser-facing redirect (SSO start and callback) succeeds with 302 (a form-posted callback with 303, on to the
      // query callback); work queued for later (a deployment) with 202.
      t.ok(['200', '201', '202', '204', '302', '303'].some((status) => operation.responses?.[status] !== undefined), `${where}: success response`)
    }
  }
  t.ok(seen.size > 0)
})

t.test('paths are spelled as the published interface spells them', async (t) => {
  const document = parse(await renderOpenApi())
  const published: Array<[string, string[]]> = [
    ['/api/auth/register', ['post']], ['/api/auth/login', ['post']], ['/api/auth/me', ['get']],
    ['/api/auth/oauth/providers', ['get']], ['/api/auth/oauth/{provider}/start', ['get']], ['/api/auth/oauth/{provider}/callback', ['get', 'post']],
    ['/api/auth/oauth/exchange', ['post']], ['/api/auth/ssh-keys', ['get', 'post']], ['/api/auth/ssh-keys/{keyId}', ['delete']],
    ['/api/auth/api-keys', ['get', 'post']], ['/api/auth/api-keys/{keyId}', ['delete']],
    ['/api/organizations', ['get', 'post']], ['/api/organizations/{orgId}', ['get', 'put', 'delete']],
    ['/api/organizations/{orgId}/members', ['get', 'post']], ['/api/organizations/{orgId}/members/{memberId}', ['put', 'delete']],
    ['/api/organizations/{orgId}/members/{memberId}/permissions', ['get', 'put']],
    ['/api/organizations/{orgId}/members/{memberId}/effective-permissions', ['get']], ['/api/organizations/{orgId}/me/permissions', ['get']],
    ['/api/organizations/{orgId}/teams', ['get', 'post']], ['/api/organizations/{orgId}/permission-groups', ['get', 'post']],
    ['/api/projects', ['get', 'post']], ['/api/projects/{id}', ['get', 'put', 'delete']], ['/api/projects/{projectId}/auth/toggle', ['post']],
    ['/api/projects/{projectId}/users/{userId}/token', ['post']],
    ['/api/p/{projectId}/auth/register', ['post']], ['/api/p/{projectId}/auth/login', ['post']], ['/api/p/{projectId}/auth/me', ['get']],
    ['/api/p/{projectId}/auth/verify', ['post']],
    ['/api/p/{projectId}/{table}', ['get', 'post', 'patch', 'delete']], ['/api/p/{projectId}/{table}/{id}', ['get', 'put', 'delete']],
    ['/api/p/{projectId}/{table}/{id}/files/{field}/upload-sessions', ['post']],
    ['/api/p/{projectId}/{table}/{id}/files/{field}/{fileId}', ['get', 'delete']],
    ['/api/projects/{projectId}/dns/providers', ['get', 'post']], ['/api/projects/{projectId}/dns/zones', ['get', 'post']],
    ['/api/projects/{projectId}/dns/records', ['get', 'post']], ['/api/projects/{projectId}/dns/gateway-instructions', ['get']]
  ]
  for (const [path, methods] of published) {
    for (const method of methods) t.ok(document.paths[path]?.[method], `${method.toUpperCase()} ${path}`)
  }
})

t.test('GET /openapi.json serves the same contract live', async (t) => {
  const app = await buildTestApp(t)
  const res = await app.inject({ url: '/openapi.json' })
  t.equal(res.statusCode, 200)
  t.same(res.json(), parse(await renderOpenApi()))
})
