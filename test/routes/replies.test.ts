import t from 'tap'
import Fastify from 'fastify'
import { accepted, created, deleted, ok } from '../../routes/replies.js'

t.test('one Location rule: the collection\'s URL and the id, the collection being the path or the path an action (on it or on a member) belongs to', async (t) => {
  const app = Fastify()
  t.teardown(() => app.close())
  app.post('/things', async (_request, reply) => created(reply, { id: 'a b', name: 'x' }))
  app.post('/things/import', async (_request, reply) => created(reply, { id: 't1' }, { fromAction: true }))
  app.post('/repos', async (_request, reply) => created(reply, { slug: 'site' }, { id: 'site' }))
  app.post('/apps/a1/deployments', async (_request, reply) => accepted(reply, { id: 'd1' }))
  app.post('/apps/a1/deployments/from-git', async (_request, reply) => accepted(reply, { id: 'd2' }, { fromAction: true }))
  app.post('/apps/a1/deployments/d1/rollback', async (_request, reply) => accepted(reply, { id: 'd3' }, { fromAction: 'onMember' }))
  app.delete('/things/:id', async (request) => deleted((request.params as { id: string }).id))
  app.get('/things', async () => ok([1, 2]))
  const cases: Array<[string, string, number, string | undefined, unknown]> = [
    ['POST', '/things?dryRun=false', 201, '/things/a%20b', { success: true, data: { id: 'a b', name: 'x' } }],
    ['POST', '/things/import', 201, '/things/t1', { success: true, data: { id: 't1' } }],
    ['POST', '/repos', 201, '/repos/site', { success: true, data: { slug: 'site' } }],
    ['POST', '/apps/a1/deployments', 202, '/apps/a1/deployments/d1', { success: true, data: { id: 'd1' } }],
    ['POST', '/apps/a1/deployments/from-git', 202, '/apps/a1/deployments/d2', { success: true, data: { id: 'd2' } }],
    ['POST', '/apps/a1/deployments/d1/rollback', 202, '/apps/a1/deployments/d3', { success: true, data: { id: 'd3' } }],
    ['DELETE', '/things/t1', 200, undefined, { success: true, data: { id: 't1', deleted: true } }],
    ['GET', '/things', 200, undefined, { success: true, data: [1, 2] }]
  ]
  for (const [method, url, status, location, body] of cases) {
    const res = await app.inject({ method: method as 'GET', url })
    t.same([res.statusCode, res.headers.location, res.json()], [status, location, body], `${method} ${url}`)
  }
})
