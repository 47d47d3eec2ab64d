import type { Test } from 'tap'
import { buildTestApp, call, orgWithRoles, type TestApp } from '../../helper.js'

/**
 * An organization with its roles, a project, and a collection `posts`
 * (title, body, a `secret` field the get and list rules deny) that anyone
 * may create in, update, delete and read.
 */
export async function auxiliarySetup (t: Test, env: Record<string, string> = {}) {
  const app = await buildTestApp(t, { env: { WEBHOOK_ALLOWED_HOSTS: '127.0.0.1', ...env } })
  const roles = await orgWithRoles(app)
  const projectId = (await call(app, 'POST', '/api/projects', roles.owner.auth, { orgId: roles.orgId, name: 'Site' })).body.data.id as string
  const open = { enabled: true, rule: { requireAuth: false } }
  const hiding = { enabled: true, rule: { requireAuth: false, deny: ['secret'] } }
  const collection = await call(app, 'POST', `/api/projects/${projectId}/collections`, roles.owner.auth, {
    name: 'posts',
    fields: [{ name: 'title', type: 'text' }, { name: 'body', type: 'text' }, { name: 'secret', type: 'text' }],
    methods: { create: open, update: open, delete: open, get: hiding, list: hiding }
  })
  if (collection.status !== 201) throw new Error(`posts: ${JSON.stringify(collection.body)}`)
  return { app, ...roles, projectId, base: `/api/projects/${projectId}/auxiliary`, data: `/api/p/${projectId}/posts` }
}

/** Polls `check` until it answers a value (the app's job worker delivers in the background); fails the test past `waitMs`. */
export async function eventually<T> (t: Test, what: string, check: () => Promise<T | null | undefined | false>, waitMs = 60_000): Promise<T> {
  const deadline = Date.now() + waitMs
  while (Date.now() < deadline) {
    const value = await check()
    if (value !== null && value !== undefined && value !== false) return value
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  t.fail(`never happened: ${what}`)
  throw new Error(what)
}

export type AuxiliaryApp = TestApp
