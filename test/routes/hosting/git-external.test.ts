import t from 'tap'
import { buildTestApp, call, orgWithRoles, type TestApp } from '../../helper.js'
import { deploymentSettled } from './fixtures.js'
import { httpsGit } from './https-git.js'
import { APPS } from '../../../services/hosting/records.js'

/** A project with one static app on `app`; the app's URL and its owner's credentials. */
async function staticSite (app: TestApp): Promise<{ site: string, auth: Record<string, string>, appId: string }> {
  const { owner, orgId } = await orgWithRoles(app)
  const projectId = (await call(app, 'POST', '/api/projects', owner.auth, { orgId, name: 'External' })).body.data.id as string
  const base = `/api/projects/${projectId}/backend`
  const appId = (await call(app, 'POST', `${base}/static-apps`, owner.auth, { name: 'www' })).body.data.id as string
  return { site: `${base}/static-apps/${appId}`, auth: owner.auth, appId }
}

t.test('an external git source that reaches the server\'s own network is refused, unless the operator allowed it', async (t) => {
  const server = await httpsGit(t, { 'index.html': '<h1>from outside</h1>\n' })
  const strict = await buildTestApp(t)
  const { site, auth } = await staticSite(strict)
  const refused = [
    'https://127.0.0.1/x.git', 'https://localhost/x.git', 'https://[::1]/x.git', 'https://169.254.169.254/latest/meta-data/',
    'https://2130706433/x.git', 'https://0x7f.1/x.git', 'https://[::ffff:127.0.0.1]/x.git', 'https://10.0.0.8/x.git', 'https://100.64.0.1/x.git',
    'https://[fd00::1]/x.git', 'https://0.0.0.0/x.git', `https://localhost:${server.port}/site.git`
  ]
  for (const url of refused) {
    const res = await call(strict, 'PUT', `${site}/git-source`, auth, { url })
    t.same([res.status, res.body.success, res.body.code, res.body.details?.fields?.[0]?.path], [400, false, 'APP_HOSTING_GIT_SOURCE_FORBIDDEN', 'body.url'], url)
  }
  t.equal((await call(strict, 'GET', site, auth)).body.data.gitSource, null, 'nothing was stored')
  t.same(server.seen, [], 'and nothing was fetched')
})

t.test('an allowed host clones for real over HTTPS; a redirect, or a source that now reaches a refused address, fails the deployment', async (t) => {
  const target = await httpsGit(t, { 'index.html': '<h1>internal</h1>\n' })
  const server = await httpsGit(t, { 'index.html': '<h1>from outside</h1>\n' }, `https://127.0.0.1:${target.port}`)
  const app = await buildTestApp(t, { env: { HOSTING_GIT_ALLOWED_HOSTS: 'localhost', HOSTING_GIT_CA_FILE: server.caFile } })
  const { site, auth, appId } = await staticSite(app)

  const set = await call(app, 'PUT', `${site}/git-source`, auth, { url: `https://LOCALHOST.:${server.port}/site.git` })
  t.equal(set.status, 200, 'an allowed host is stored')
  t.match(set.body.data.gitSource, { url: `https://localhost:${server.port}/site.git`, branch: 'main' }, 'the URL is kept as parsed')
  const deployed = await call(app, 'POST', `${site}/deployments/from-git`, auth, {})
  t.match(await deploymentSettled(app, site, auth, deployed.body.data.id), { state: 'live', source: { type: 'git', commit: /^[0-9a-f]{40}$/ } })
  t.ok(server.seen.some((path) => path.startsWith('/site.git/info/refs')), 'the clone reached the allowed host')

  t.equal((await call(app, 'PUT', `${site}/git-source`, auth, { url: `https://localhost:${server.port}/moved/site.git` })).status, 200)
  const redirected = await call(app, 'POST', `${site}/deployments/from-git`, auth, {})
  t.match(await deploymentSettled(app, site, auth, redirected.body.data.id), { state: 'build_failed', reason: /^Could not clone .*302/s })
  t.same(target.seen, [], 'the redirect was not followed')

  // A source stored before this check, or whose name now points inside: the clone checks again.
  for (const url of [`https://127.0.0.1:${target.port}/site.git`, `https://2130706433:${target.port}/site.git`]) {
    await app.store.collection(APPS).updateOne({ _id: appId }, { $set: { 'gitSource.url': url } })
    const inside = await call(app, 'POST', `${site}/deployments/from-git`, auth, {})
    t.match(await deploymentSettled(app, site, auth, inside.body.data.id), { state: 'build_failed', reason: /^The git source's host reaches a loopback address/ }, url)
  }
  t.same(target.seen, [], 'nothing reached the refused address')
})
