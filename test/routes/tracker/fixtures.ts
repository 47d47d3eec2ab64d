import type { Test } from 'tap'
import { buildTestApp, call, orgWithRoles, signUp, type HttpMethod, type TestApp } from '../../helper.js'

type Headers = Record<string, string>

/**
 * An organization with its roles (owner: tracker.admin, member: tracker.write,
 * viewer: tracker.read, an outsider), a second member who is a guest of the
 * tracker project, a platform project, and the tracker project WEB the owner
 * made with member and guest in it.
 */
export async function trackerSetup (t: Test, env: Record<string, string> = {}) {
  const app = await buildTestApp(t, { env })
  const roles = await orgWithRoles(app)
  const guest = await signUp(app, 'guest@example.com')
  await call(app, 'POST', `/api/organizations/${roles.orgId}/members`, roles.owner.auth, { userId: guest.id, role: 'member' })
  const projectId = (await call(app, 'POST', '/api/projects', roles.owner.auth, { orgId: roles.orgId, name: 'Site' })).body.data.id as string
  const base = `/api/projects/${projectId}/tracker`
  const created = await call(app, 'POST', `${base}/projects`, roles.owner.auth, { name: 'Website', identifier: 'web' })
  const lpId = created.body.data.id as string
  const lp = `${base}/projects/${lpId}`
  await call(app, 'POST', `${lp}/members`, roles.owner.auth, { userId: roles.member.id, role: 'member' })
  await call(app, 'POST', `${lp}/members`, roles.owner.auth, { userId: guest.id, role: 'guest' })
  /** One call, asserting nothing: status, body, headers. */
  const api = async (method: HttpMethod, url: string, headers: Headers, payload?: unknown) => await call(app, method, url, headers, payload)
  /** One call that must succeed; its data. */
  const must = async (method: HttpMethod, url: string, headers: Headers, payload?: unknown) => {
    const res = await call(app, method, url, headers, payload)
    if (res.status >= 300) throw new Error(`${method} ${url}: ${res.status} ${JSON.stringify(res.body)}`)
    return res.body.data
  }
  return { app, ...roles, guest, projectId, base, lpId, lp, created, api, must }
}

export type TrackerSetup = Awaited<ReturnType<typeof trackerSetup>>
export type { TestApp }
