import t from 'tap'
import Fastify from 'fastify'
import { created, deleted, ok } from '../../routes/replies.js'

t.test('one Location rule: the collection\'s URL and the id, the collection being the path or the path an action belongs to', async (t) => {
  const app = Fastify()
  t.teardown(() => app.close())
  app.post('/things', async (_request, reply) => created(reply, { id: 'a b', name: 'x' }))
  app.post('/things/import', async (_request, reply) => created(reply, { id: 't1' }, { fromAction: true }))
  app.post('/repos', async (_request, reply) => created(reply, { slug: 'site' }, { id: 'site' }))
  app.delete('/things/:id', async (request) => deleted((request.params as { id: string }).id))
  app.get('/things', async () => ok([1, 2]))
  const cases: Array<[string, string, number, string | undefined, unknown]> = [
    ['POST', '/things?dryRun=false', 201, '/things/a%20b', { success: true, data: { id: 'a b', name: 'x' } }],
    ['POST', '/things/import', 201, '/things/t1', { success: true, data: { id: 't1' } }],
    ['POST', '/repos', 201, '/repos/site', { success: true, data: { slug: 'site' } }],
    ['DELETE', '/things/t1', 200, undefined, { success: true, data: { id: 't1', deleted: true } }],
    ['GET', '/things', 200, undefined, { success: true, data: [1, 2] }]
  ]
  for (const [method, url, status, location, body] of cases) {
    const res = await app.inject({ method: method as 'GET', url })
    t.same([res.statusCode, res.headers.location, res.json()], [status, location, body], `${method} ${url}`)
  }
})
