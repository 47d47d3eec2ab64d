import type { Test } from 'tap'
import { buildTestApp, call, orgWithRoles } from '../../helper.js'

/** An organization with its roles, a project, and a built-in zone example.com. */
export async function dnsSetup (t: Test, env: Record<string, string> = {}) {
  const app = await buildTestApp(t, { env })
  const roles = await orgWithRoles(app)
  const projectId = (await call(app, 'POST', '/api/projects', roles.owner.auth, { orgId: roles.orgId, name: 'Site' })).body.data.id as string
  const base = `/api/projects/${projectId}/dns`
  const zone = await call(app, 'POST', `${base}/zones`, roles.owner.auth, { name: 'Example.com.' })
  return { app, ...roles, projectId, base, zoneId: zone.body.data.id as string, zone }
}
