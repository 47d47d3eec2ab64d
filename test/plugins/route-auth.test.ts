import t from 'tap'
import { parse } from 'yaml'
import { buildApp } from '../../app.js'
import { testConfig } from '../helper.js'
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
