import t, { type Test } from 'tap'
import type { AddressInfo } from 'node:net'
import { buildTestApp } from '../helper.js'
import { createAdmin, memoryStorage, PlinthError, unwrap } from '../../sdk/admin/index.js'
import { createClient } from '../../sdk/client/index.js'

/** A listening server, and a fetch that counts the refreshes made through it by path. */
async function serve (t: Test) {
  const app = await buildTestApp(t)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const baseUrl = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
  const refreshes: string[] = []
  const counting = async (request: Request): Promise<Response> => {
    const response = await fetch(request)
    const path = new URL(request.url).pathname
    if (path.endsWith('/auth/refresh')) refreshes.push(`${path} ${response.status}`)
    return response
  }
  return { app, baseUrl, refreshes, counting }
}

t.test('a token of the wrong kind is refused with its own code and never refreshed; its later expiry is', async (t) => {
  const { baseUrl, refreshes, counting } = await serve(t)
  const storage = memoryStorage()
  const admin = createAdmin({ baseUrl, fetch: counting, storage, storageKey: 'kept' })
  await admin.auth.register({ email: 'ada@example.com', password: 'correct horse battery', name: 'Ada' })
  await admin.auth.login({ email: 'ada@example.com', password: 'correct horse battery' })
  const org = await admin.organizations.create({ name: 'Engines' })
  const project = await admin.projects.create({ orgId: org.id, name: 'Shop' })
  await admin.projects.setAuth(project.id, true)
  const kept = await admin.auth.session()

  // An end user's route takes a project token only: the platform session's token is of the wrong kind, however fresh.
  const endUserMe = async () => await unwrap(admin.api.GET('/api/p/{projectId}/auth/me', { params: { path: { projectId: project.id } } })).catch((error: unknown) => error)
  const refused = { name: 'PlinthError', status: 401, code: 'APP_WRONG_TOKEN_KIND', details: { allowed: ['projectUserToken'] }, message: /^A platform access token was sent where/ }
  for (let i = 0; i < 3; i++) t.match(await endUserMe(), refused, `call ${i + 1} refused, saying what the route takes`)
  const parallel = await Promise.all(Array.from({ length: 5 }, endUserMe))
  t.ok(parallel.every((error) => error instanceof PlinthError && error.code === 'APP_WRONG_TOKEN_KIND'), 'five at once refused alike')
  t.same(refreshes, [], 'not one refresh for eight refusals')
  t.same(await admin.auth.session(), kept, 'the session is kept as it was')
  t.equal((await admin.auth.me()).email, 'ada@example.com', 'and works where its kind is taken')

  // The server's clock is now an hour past the one the session's expiry was kept by (this computer's clock behind, a
  // laptop woken from sleep): the very token just refused as of the wrong kind has expired there, and is refreshed as
  // any other would be. Date.now is the server's clock and this client's alike; the expiry kept says "fresh" still.
  storage.set('kept', JSON.stringify({ ...kept, expiresAt: new Date(Date.now() + 86_400_000).toISOString() }))
  const realNow = Date.now
  Date.now = () => realNow() + 3_600_000
  t.teardown(() => { Date.now = realNow })
  try {
    t.same((await admin.organizations.list()).map((o) => o.id), [org.id], 'the expired token is refreshed and the call sent again')
  } finally {
    Date.now = realNow
  }
  t.same(refreshes, ['/api/auth/refresh 200'], 'with one refresh')
  t.not((await admin.auth.session())?.accessToken, kept?.accessToken, 'the new token is kept')
})

t.test('an end user\'s token on another project\'s routes (a storage key shared by two clients) costs no refresh', async (t) => {
  const { baseUrl, refreshes, counting } = await serve(t)
  const admin = createAdmin({ baseUrl })
  await admin.auth.register({ email: 'ada@example.com', password: 'correct horse battery', name: 'Ada' })
  await admin.auth.login({ email: 'ada@example.com', password: 'correct horse battery' })
  const org = await admin.organizations.create({ name: 'Engines' })
  const [shop, blog] = [await admin.projects.create({ orgId: org.id, name: 'Shop' }), await admin.projects.create({ orgId: org.id, name: 'Blog' })]
  for (const project of [shop, blog]) await admin.projects.setAuth(project.id, true)

  const storage = memoryStorage()
  const inShop = createClient({ baseUrl, projectId: shop.id, fetch: counting, storage, storageKey: 'session' })
  const inBlog = createClient({ baseUrl, projectId: blog.id, fetch: counting, storage, storageKey: 'session' })
  const session = await inShop.auth.signUp({ email: 'ann@example.com', password: 'long enough 1' })
  const refusal = await inBlog.auth.me().catch((error: unknown) => error)
  t.match(refusal, { name: 'PlinthError', status: 401, code: 'APP_WRONG_TOKEN_KIND', details: { allowed: ['projectUserToken'] }, message: /token of another project/ }, 'the blog refuses the shop\'s token as such')
  t.match(await inBlog.collection('_users').list().catch((error: unknown) => error), { code: 'APP_WRONG_TOKEN_KIND', details: { allowed: ['projectUserToken', 'platformToken'] } }, 'on the data API too')
  // A refresh through the blog would have presented the shop's refresh token there: refused, it would end the session.
  t.same(refreshes, [], 'nothing refreshed')
  t.same(await inShop.auth.session(), session, 'the shop\'s session is kept')
  t.equal((await inShop.auth.me()).email, 'ann@example.com', 'and works on its own project')
})
