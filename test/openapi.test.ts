import t from 'tap'
import { readFileSync } from 'node:fs'
import { parse } from 'yaml'
import { validate } from '@readme/openapi-parser'
import { OPENAPI_FILE, renderOpenApi } from '../scripts/openapi.js'
import { buildTestApp } from './helper.js'

t.test('openapi.yaml is current and valid', async (t) => {
  const generated = await renderOpenApi()
  const committed = readFileSync(OPENAPI_FILE, 'utf8')
  t.equal(committed, generated, 'openapi.yaml is stale: run `npm run openapi` and commit it')

  const document = parse(generated)
  const result = await validate(structuredClone(document))
  t.ok(result.valid, `validates as OpenAPI 3.x: ${JSON.stringify(result.valid ? [] : result.errors).slice(0, 500)}`)
  t.match(document.openapi, /^3\./)
})

t.test('every operation is documented', async (t) => {
  const document = parse(await renderOpenApi())
  const seen = new Set<string>()
  for (const [path, item] of Object.entries<Record<string, any>>(document.paths)) {
    for (const [method, operation] of Object.entries<any>(item)) {
      const where = `${method.toUpperCase()} ${path}`
      t.match(operation.operationId, /^[a-z][A-Za-z0-9]+$/, `${where}: camelCase operationId`)
      t.notOk(seen.has(operation.operationId), `${where}: operationId unique`)
      seen.add(operation.operationId)
      t.ok(operation.summary, `${where}: summary`)
      t.ok(Array.isArray(operation.tags) && operation.tags.length > 0, `${where}: tags`)
      // A browser-facing redirect (SSO start and callback) succeeds with 302.
      t.ok(['200', '201', '204', '302'].some((status) => operation.responses?.[status] !== undefined), `${where}: success response`)
    }
  }
  t.ok(seen.size > 0)
})

t.test('GET /openapi.json serves the same contract live', async (t) => {
  const app = await buildTestApp(t)
  const res = await app.inject({ url: '/openapi.json' })
  t.equal(res.statusCode, 200)
  t.same(res.json(), parse(await renderOpenApi()))
})
