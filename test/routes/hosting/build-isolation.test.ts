import t, { type Test } from 'tap'
import { execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { cpSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { buildTestApp, call, orgWithRoles, signUp, tempDir, type TestApp } from '../../helper.js'
import { deploymentSettled, FIXTURES, packFixture, uploadSource, viaGateway } from './fixtures.js'

const STRIPE_KEY = 'sk_live_4eC39HqLyjWDarjtT1zdp7dc'
const BUILD_TOKEN = 'build-token-9b1e44'

/** The victim fixture with an .npmrc naming the poisoner's registry, packed as a user would. */
function victimSource (t: Test, registryPort: number): Buffer {
  const dir = tempDir(t, 'plinth-victim-')
  cpSync(join(FIXTURES, 'npm-cache-victim'), join(dir, 'src'), { recursive: true })
  writeFileSync(join(dir, 'src/.npmrc'), `registry=http://127.0.0.1:${registryPort}/\nfetch-retries=0\n`)
  execFileSync('tar', ['-czf', join(dir, 'source.tar.gz'), '-C', join(dir, 'src'), '.'])
  return readFileSync(join(dir, 'source.tar.gz'))
}

async function deploy (app: TestApp, appUrl: string, auth: Record<string, string>, archive: Buffer): Promise<string> {
  const queued = await call(app, 'POST', `${appUrl}/deployments`, auth, { uploadId: await uploadSource(app, appUrl, auth, archive) })
  const settled = await deploymentSettled(app, appUrl, auth, queued.body.data.id)
  if (settled.state !== 'live') throw new Error(`deployment ${settled.id} ended ${settled.state}: ${settled.reason ?? ''}`)
  return settled.id
}

const buildLog = async (app: TestApp, appUrl: string, auth: Record<string, string>, deploymentId: string): Promise<string> =>
  ((await call(app, 'GET', `${appUrl}/logs/build?deploymentId=${deploymentId}`, auth)).body.data as Array<{ line: string }>).map((line) => line.line).join('\n')

t.test('a build sees only its own project\'s npm cache and the secrets marked for builds', async (t) => {
  const app = await buildTestApp(t, { env: { GATEWAY_PORT: '0' } })
  const port = app.hosting.gatewayPort() as number
  const createApp = async (auth: Record<string, string>, projectId: string, name: string): Promise<string> =>
    `/api/projects/${projectId}/backend/apps/${(await call(app, 'POST', `/api/projects/${projectId}/backend/apps`, auth, { name, healthCheckPath: '/healthz' })).body.data.id as string}`

  // Tenant B, in an organization of its own, plants a package in the npm cache its build is given.
  const mallory = await signUp(app, 'mallory@example.com')
  const evilOrg = (await call(app, 'POST', '/api/organizations', mallory.auth, { name: 'Evil' })).body.data.id as string
  const evilProject = (await call(app, 'POST', '/api/projects', mallory.auth, { orgId: evilOrg, name: 'Evil' })).body.data.id as string
  const poisonerUrl = await createApp(mallory.auth, evilProject, 'poisoner')
  const poisoned = await deploy(app, poisonerUrl, mallory.auth, packFixture(t, 'npm-cache-poisoner'))
  const planted = /planted plinth-poison-pkg in the npm cache for the registry on port (\d+)/.exec(await buildLog(app, poisonerUrl, mallory.auth, poisoned))
  t.ok(planted, 'the poisoner\'s build planted its package')
  const registryPort = Number(planted?.[1])

  // Its own project's next build installs it from the cache (the registry is gone): the attack works where it may.
  const ownUrl = await createApp(mallory.auth, evilProject, 'own-victim')
  const own = await deploy(app, ownUrl, mallory.auth, victimSource(t, registryPort))
  t.match(await buildLog(app, ownUrl, mallory.auth, own), /added 1 package/, 'a build of the same project shares its cache')
  t.equal((await viaGateway(port, 'own-victim.apps.localhost', '/poisoned')).body, 'STRIPE_KEY=(absent)', 'and the package\'s install script ran there')

  // Tenant A depends on the same name without a lock file and holds a runtime secret and a build-time one.
  const { owner, orgId } = await orgWithRoles(app)
  const projectId = (await call(app, 'POST', '/api/projects', owner.auth, { orgId, name: 'Shop' })).body.data.id as string
  const victimUrl = await createApp(owner.auth, projectId, 'victim')
  t.match((await call(app, 'PUT', `${victimUrl}/secrets/STRIPE_KEY`, owner.auth, { value: STRIPE_KEY })).body.data, { name: 'STRIPE_KEY', buildTime: false })
  t.match((await call(app, 'PUT', `${victimUrl}/secrets/BUILD_TOKEN`, owner.auth, { value: 'first', buildTime: true })).body.data, { name: 'BUILD_TOKEN', version: 1, buildTime: true })
  t.match((await call(app, 'PUT', `${victimUrl}/secrets/BUILD_TOKEN`, owner.auth, { value: BUILD_TOKEN })).body.data, { version: 2, buildTime: true }, 'a new value keeps the flag')
  t.same((await call(app, 'GET', `${victimUrl}/secrets`, owner.auth)).body.data.map((secret: { name: string, buildTime: boolean }) => [secret.name, secret.buildTime]), [['BUILD_TOKEN', true], ['STRIPE_KEY', false]])
  t.same([(await call(app, 'PUT', `${victimUrl}/secrets/OTHER`, owner.auth, { value: 'x', buildTime: 'yes' })).status], [400], 'the flag is a boolean')

  const victim = await deploy(app, victimUrl, owner.auth, victimSource(t, registryPort))
  const log = await buildLog(app, victimUrl, owner.auth, victim)
  t.notMatch(log, /added 1 package/, 'another project\'s planted package is not installed')
  t.equal((await viaGateway(port, 'victim.apps.localhost', '/poisoned')).body, 'clean', 'nothing but its own build wrote its artifact')
  t.match(log, /STRIPE_KEY in the build: no/, 'a runtime secret stays out of the build')
  t.match(log, /BUILD_TOKEN in the build: yes/, 'a build-time secret reaches it')
  t.match(log, new RegExp(`BUILD_TOKEN sha256 ${createHash('sha256').update(BUILD_TOKEN).digest('hex')}`), 'with its value')
  t.equal((await viaGateway(port, 'victim.apps.localhost', '/stripe-key-digest')).body, createHash('sha256').update(STRIPE_KEY).digest('hex'), 'the instance has its runtime secret')
  t.notOk(log.includes(STRIPE_KEY) || log.includes(BUILD_TOKEN), 'no value in the build log')
})
