import Fastify from 'fastify'

// The ceiling: a bare Fastify hello-world on the same machine, in the same run.
const app = Fastify({ logger: false })
app.get('/', async () => ({ hello: 'world' }))
// For POST scenarios, a second reference: the same request body, parsed as JSON and answered.
app.post('/', async () => ({ hello: 'world' }))
const address = await app.listen({ port: 0, host: '127.0.0.1' })
process.send?.({ address })
