import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Envelope, errorResponses } from '../schemas/envelope.js'
import { benchOwner, benchPosts, startBenchApp } from './bench-app.js'

/**
 * The real app on a temp DATA_DIR. Until the product has its own Store-backed
 * routes to measure, two bench-only routes read and write through the same
 * stack (validation, Store, envelope serialization) a product route uses.
 */
const Sample = Type.Object({ _id: Type.String(), title: Type.String(), views: Type.Integer(), tags: Type.Array(Type.String()) })

const storeProbe: FastifyPluginAsyncTypebox = async (app) => {
  const samples = app.store.collection('bench_samples')
  app.get('/bench/samples/:id', {
    schema: { params: Type.Object({ id: Type.String() }), response: { 200: Envelope(Sample), ...errorResponses(404) } }
  }, async (request, reply) => {
    const sample = await samples.findOne({ _id: request.params.id })
    if (sample === null) return reply.code(404).send({ success: false as const, code: 'APP_NOT_FOUND', message: 'not found' })
    return { success: true as const, data: sample as typeof Sample.static }
  })
  app.post('/bench/samples', {
    schema: { body: Type.Object({ title: Type.String(), views: Type.Integer(), tags: Type.Array(Type.String()) }), response: { 201: Envelope(Type.Object({ id: Type.String() })) } }
  }, async (request, reply) => {
    const { insertedId } = await samples.insertOne({ ...request.body })
    return reply.code(201).send({ success: true as const, data: { id: insertedId } })
  })
}

// The login scenario hammers one account on purpose; the limiter would (rightly) stop it.
const { app } = await startBenchApp({ AUTH_RATE_LIMIT_MAX: '1000000' }, { dataDir: process.env.DATA_DIR })
await app.register(storeProbe)
const address = await app.listen({ port: 0, host: '127.0.0.1' })
const seeded = await app.store.collection('bench_samples').insertOne({ title: 'seed', views: 1, tags: ['a', 'b'] })
const { userId, accessToken, orgId } = await benchOwner(app)
const { token: pat } = await app.identity.apiKeys.create(userId, { name: 'bench' })
const project = await app.projects.create(orgId, userId, { name: 'Bench' })
// Issue-5 scenarios: a `posts` collection of 100,000 records under an owner rule on every method.
const { endUser } = await benchPosts(app, project.id)
const serviceToken = await app.projectAuth.serviceTokens.create(project.id, { name: 'bench', createdBy: userId })
const postRecords = app.store.collection(`p_${project.id}_posts`)
const authors = [endUser.user.id, 'someone-else-1', 'someone-else-2', 'someone-else-3']
const now = new Date()
for (let batch = 0; batch < 100; batch++) {
  await postRecords.insertMany(Array.from({ length: 1000 }, (_, i) => ({
    title: `post ${batch * 1000 + i}`, status: ['draft', 'review', 'published'][i % 3], author: authors[(batch * 1000 + i) % 4], views: i, createdAt: now, updatedAt: now, version: 1
  })))
}
const ownPost = await postRecords.findOne({ author: endUser.user.id })
await app.collections.definitions.create(project.id, {
  name: 'docs',
  fields: [{ name: 'author', type: 'text' }, { name: 'attachment', type: 'file', maxSize: 512 * 1024 * 1024 }],
  methods: Object.fromEntries(['create', 'get', 'upload', 'download'].map((method) => [method, { enabled: true, rule: { requireAuth: true, owner: 'author' } }]))
})
const doc = await app.records.create(project.id, 'docs', { kind: 'user', id: endUser.user.id }, {})
// The regex bar: a public collection holding one 100 KB value for a catastrophic pattern to run over.
const open = { enabled: true, rule: { requireAuth: false } }
await app.collections.definitions.create(project.id, { name: 'notes', fields: [{ name: 'body', type: 'text' }], methods: { list: open } })
await app.store.collection(`p_${project.id}_notes`).insertOne({ body: 'a'.repeat(100_000), createdAt: now, updatedAt: now, version: 1 })
// Issue-15 scenario: 10,000 public records, one in a hundred in the category a filter on an unindexed field asks for.
await app.collections.definitions.create(project.id, {
  name: 'catalog',
  fields: [{ name: 'title', type: 'text' }, { name: 'category', type: 'text' }, { name: 'price', type: 'number' }],
  methods: { list: open }
})
await app.store.collection(`p_${project.id}_catalog`).insertMany(Array.from({ length: 10_000 }, (_, i) => ({
  title: `item ${i}`, category: i % 100 === 42 ? 'rare' : `common ${i % 7}`, price: i % 500, createdAt: now, updatedAt: now, version: 1
})))
process.send?.({ address, sampleId: seeded.insertedId, accessToken, pat, projectId: project.id, projectToken: endUser.accessToken, serviceToken: serviceToken.token, postId: ownPost?._id, docId: doc.id })
