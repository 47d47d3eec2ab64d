import type { Test } from 'tap'
import { buildTestApp, call, signUp, type TestApp } from '../../helper.js'
import { SseStream } from './sse-client.js'

export const REALTIME_TEST_ENV = {
  REALTIME_POLL_MS: '50',
  REALTIME_RECHECK_MS: '200',
  REALTIME_MAX_CONNECTIONS_PER_USER: '2',
  REALTIME_MAX_SUBSCRIPTIONS: '3'
}

/**
 * A listening app with end-user auth on and a collection `notes` whose get
 * and list rules show each user only their own notes and deny `secret`.
 */
export async function notesProject (t: Test, env: Record<string, string> = {}) {
  const app = await buildTestApp(t, { env: { ...REALTIME_TEST_ENV, ...env } })
  const admin = await signUp(app, 'admin@example.com')
  const orgId = (await call(app, 'POST', '/api/organizations', admin.auth, { name: 'Acme' })).body.data.id as string
  const projectId = (await call(app, 'POST', '/api/projects', admin.auth, { orgId, name: 'Notes' })).body.data.id as string
  await call(app, 'POST', `/api/projects/${projectId}/auth/toggle`, admin.auth, { enabled: true })
  const own = { enabled: true, rule: { requireAuth: true, owner: 'owner', deny: ['secret'] } }
  const defined = await call(app, 'POST', `/api/projects/${projectId}/collections`, admin.auth, {
    name: 'notes',
    fields: [{ name: 'title', type: 'text' }, { name: 'owner', type: 'text' }, { name: 'secret', type: 'text' }],
    methods: { create: { enabled: true, rule: { requireAuth: true, owner: 'owner' } }, update: own, delete: own, get: own, list: own }
  })
  if (defined.status !== 201) throw new Error(JSON.stringify(defined.body))
  const base = await app.listen({ port: 0, host: '127.0.0.1' })
  return { app, admin, projectId, base, ...endUsers(t, app, projectId, base) }
}

export function endUsers (t: Test, app: TestApp, projectId: string, base: string) {
  const register = async (email: string) => {
    const res = await call(app, 'POST', `/api/p/${projectId}/auth/register`, {}, { email, password: 'correct horse battery' })
    if (res.status !== 201) throw new Error(JSON.stringify(res.body))
    const { accessToken, user } = res.body.data as { accessToken: string, user: { id: string } }
    return { id: user.id, token: accessToken, auth: { authorization: `Bearer ${accessToken}` } }
  }
  const subscribe = async (headers: Record<string, string>, subscriptions: unknown, extra: Record<string, string> = {}, on = base) => {
    const opened = await SseStream.open(`${on}/api/p/${projectId}/realtime?subscriptions=${encodeURIComponent(JSON.stringify(subscriptions))}`, { ...headers, ...extra })
    // Closed before the app closes, whatever the test did with it.
    if (opened instanceof SseStream) t.teardown(() => { opened.close() })
    return opened
  }
  const stream = async (headers: Record<string, string>, subscriptions: unknown, extra: Record<string, string> = {}, on = base): Promise<SseStream> => {
    const opened = await subscribe(headers, subscriptions, extra, on)
    if (!(opened instanceof SseStream)) throw new Error(`refused: ${JSON.stringify(opened)}`)
    return opened
  }
  const write = async (method: 'POST' | 'PUT' | 'DELETE', path: string, headers: Record<string, string>, body?: unknown) => {
    const res = await call(app, method, `/api/p/${projectId}/${path}`, headers, body)
    if (res.status >= 300) throw new Error(`${method} ${path}: ${JSON.stringify(res.body)}`)
    return res.body.data as { id: string }
  }
  return { register, subscribe, stream, write }
}
