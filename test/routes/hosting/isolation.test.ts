import t, { type Test } from 'tap'
import { chmodSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { createServer, connect, type AddressInfo, type Server } from 'node:net'
import { networkInterfaces } from 'node:os'
import { join } from 'node:path'
import { buildTestApp, call, orgWithRoles, type TestApp } from '../../helper.js'
import { probeSandbox } from '../../../services/hosting/process-driver/index.js'
import { sandboxPath } from '../../../services/hosting/process-driver/driver.js'
import { deploymentSettled, packFixture, uploadSource, viaGateway } from './fixtures.js'

/**
 * Issue 26, from inside a deployed app as a hostile tenant: the host's
 * loopback, the platform's API, the host's own address, another app's
 * instance and its link are all out of reach; the app answers through the
 * gateway; its DNS and routes are the ones its namespace was given; its
 * listeners are its namespace's, not the host's; it sees none of the
 * platform's folders (GIT_REPOS_DIR outside DATA_DIR), no other tenant's
 * cgroup and only its own environment, and it cannot make a user namespace.
 */
const sandbox = probeSandbox()
const skip = sandbox.network === null ? `no network namespaces here: ${sandbox.degradedReason ?? ''}` : false

async function secretServer (t: Test, host: string, secret: string): Promise<number> {
  const server: Server = createServer((socket) => socket.end(`${secret}\n`))
  await new Promise<void>((resolve) => server.listen(0, host, resolve))
  t.teardown(() => server.close())
  return (server.address() as AddressInfo).port
}

/** A directory the sandbox user can reach, as a real deployment's folders are; removed with the test. */
function searchableDir (t: Test, parent: string, prefix: string, mode: number): string {
  const dir = mkdtempSync(join(parent, prefix))
  chmodSync(dir, mode)
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

async function deployProbe (app: TestApp, projectId: string, auth: Record<string, string>, name: string, archive: Buffer): Promise<string> {
  const appUrl = `/api/projects/${projectId}/backend/apps/${(await call(app, 'POST', `/api/projects/${projectId}/backend/apps`, auth, { name })).body.data.id as string}`
  const deployment = await call(app, 'POST', `${appUrl}/deployments`, auth, { uploadId: await uploadSource(app, appUrl, auth, archive) })
  const settled = await deploymentSettled(app, appUrl, auth, deployment.body.data.id)
  if (settled.state !== 'live') throw new Error(`${name} did not go live: ${settled.reason ?? settled.state}`)
  return (await call(app, 'GET', appUrl, auth)).body.data.id as string
}

async function hostRefuses (port: number): Promise<boolean> {
  return await new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1')
    socket.once('connect', () => { socket.destroy(); resolve(false) })
    socket.once('error', () => resolve(true))
  })
}

t.test('an app reaches nothing of the host or other apps, only the gateway reaches it, and it sees nothing of the platform', { skip }, async (t) => {
  const dataDir = searchableDir(t, '/tmp', 'plinth-isolation-data-', 0o711)
  const reposDir = searchableDir(t, '/var/tmp', 'plinth-isolation-repos-', 0o755)
  const app = await buildTestApp(t, { env: { GATEWAY_PORT: '0', DATA_DIR: dataDir, GIT_REPOS_DIR: reposDir } })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const apiPort = (app.server.address() as AddressInfo).port
  const gatewayPort = app.hosting.gatewayPort() as number
  const loopbackPort = await secretServer(t, '127.0.0.1', 'secret-on-loopback')
  const anyPort = await secretServer(t, '0.0.0.0', 'secret-on-every-address')
  const hostAddress = Object.entries(networkInterfaces()).filter(([name]) => !name.startsWith('plv')).flatMap(([, entries]) => entries ?? [])
    .find((entry) => entry.family === 'IPv4' && !entry.internal)?.address

  const { owner, orgId } = await orgWithRoles(app)
  const projectId = (await call(app, 'POST', '/api/projects', owner.auth, { orgId, name: 'Tenants' })).body.data.id as string
  t.equal((await call(app, 'POST', `/api/projects/${projectId}/git/repositories`, owner.auth, { name: 'private', readme: true })).status, 201)
  const gitDir = join(reposDir, projectId, readdirSync(join(reposDir, projectId)).find((name) => name.endsWith('.git')) as string)

  const archive = packFixture(t, 'probe-app')
  const [appA, appB] = [await deployProbe(app, projectId, owner.auth, 'tenant-a', archive), await deployProbe(app, projectId, owner.auth, 'tenant-b', archive)]
  const [instanceA] = (await app.hosting.releases.running()).filter((instance) => instance.appId === appA)
  const [instanceB] = (await app.hosting.releases.running()).filter((instance) => instance.appId === appB)
  const ask = async (path: string): Promise<string> => {
    const answer = await viaGateway(gatewayPort, 'tenant-a.apps.localhost', path)
    if (answer.status !== 200) throw new Error(`${path}: ${answer.status} ${answer.body}`)
    return answer.body
  }
  t.equal(await ask('/'), `probe ${instanceA._id}`, 'the app answers through the gateway')
  t.equal((await viaGateway(gatewayPort, 'tenant-b.apps.localhost', '/')).body, `probe ${instanceB._id}`)

  const b = instanceB.running as NonNullable<typeof instanceB.running>
  const peerLink = b.host.replace(/\d+$/, (last) => String(Number(last) - 1))

  t.test('nothing of the platform\'s folders is in its sandbox, wherever they are', async (t) => {
    t.equal(await ask(`/read?path=${join(gitDir, 'HEAD')}`), 'error:ENOENT', 'a repository in GIT_REPOS_DIR, outside DATA_DIR, is not there')
    t.equal(await ask(`/list?path=${reposDir}`), 'error:ENOENT')
    t.equal(await ask(`/read?path=${join(dataDir, 'plinth.db')}`), 'error:ENOENT', 'nor is DATA_DIR')
    const root = (await ask('/list?path=/')).split('\n')
    for (const hidden of ['home', 'root', 'run', 'srv', 'sys', 'var', 'opt', 'mnt', 'boot']) t.notOk(root.includes(hidden), `no /${hidden}`)
    t.notOk((await ask('/list?path=/etc')).split('\n').includes('shadow'), 'no more of /etc than a program needs')
  })

  t.test('no other tenant\'s cgroup, only its own environment', async (t) => {
    t.equal(await ask('/list?path=/sys/fs/cgroup'), 'error:ENOENT', 'no cgroup tree to list')
    t.ok((await ask('/read?path=/proc/self/cgroup')).trim().split('\n').every((line) => line.endsWith(':/')), 'its own cgroup is the root of its cgroup namespace')
    const env = JSON.parse(await ask('/env')) as Record<string, string>
    // PWD: the shell that holds the start until the instance is in its cgroup sets it (to the app's own directory).
    // _TAPJS_*: the test runner's spawn hook adds them to every child process of the test, the server's too.
    t.same(Object.keys(env).filter((name) => !name.startsWith('_TAPJS_')).sort(), ['HOME', 'HOST', 'PATH', 'PLINTH_APP_ID', 'PLINTH_DEPLOYMENT_ID', 'PLINTH_INSTANCE_ID', 'PORT', 'PWD'], 'only its own environment')
    t.equal(env.PATH, sandboxPath(), 'and not the server\'s PATH')
  })

  t.test('it cannot make a user namespace of its own, where it would be root', async (t) => {
    t.match(await ask('/userns'), /^error:unshare: unshare failed/)
  })

  t.test('it reaches neither the host nor another app, only the internet through slirp4netns', async (t) => {
    const unreachable: Array<[string, string, number, RegExp]> = [
      ['a loopback-only service of the host', '127.0.0.1', loopbackPort, /^error:ECONNREFUSED$/],
      ['the platform\'s API', '127.0.0.1', apiPort, /^error:ECONNREFUSED$/],
      ['the gateway on the host\'s loopback', '127.0.0.1', gatewayPort, /^error:ECONNREFUSED$/],
      ['another app\'s instance, directly', b.host, b.port, /^error:EACCES$/],
      ['the host\'s end of another app\'s link', peerLink, anyPort, /^error:EACCES$/],
      ['a private address', '10.255.255.1', anyPort, /^error:EACCES$/],
      ['the cloud metadata service', '169.254.169.254', 80, /^error:EACCES$/],
      ['slirp4netns\'s alias for the host', '10.0.2.2', anyPort, /^error:/],
      ['slirp4netns\'s DNS forwarder on another port', '10.0.2.3', anyPort, /^error:/],
      ...(hostAddress === undefined ? [] : [['the host\'s own address', hostAddress, anyPort, /^error:EACCES$/]] as Array<[string, string, number, RegExp]>)
    ]
    for (const [what, host, port, refusal] of unreachable) t.match(await ask(`/connect?host=${host}&port=${port}`), refusal, what)

    t.equal(await ask('/read?path=/etc/resolv.conf'), 'nameserver 10.0.2.3\n', 'names resolve through slirp4netns\'s forwarder')
    t.notMatch(await ask('/dns?name=example.com'), /^error:(ETIMEOUT|ECONNREFUSED)$/, 'and the host\'s resolver answers it (outbound to the internet cannot be tried here)')
    const routes = (await ask('/read?path=/proc/net/route')).split('\n').slice(1).filter((line) => line !== '').map((line) => line.split('\t'))
    t.ok(routes.some(([iface, destination, gateway]) => iface === 'tap0' && destination === '00000000' && gateway === '0202000A'), 'the default route is slirp4netns\'s')
    for (const [destination, mask] of [['0000000A', '000000FF'], ['000010AC', '0000F0FF'], ['0000A8C0', '0000FFFF'], ['0000FEA9', '0000FFFF']]) {
      t.ok(routes.some((route) => route[1] === destination && route[7] === mask && (Number.parseInt(route[3], 16) & 0x200) !== 0), `a prohibit route for ${destination}/${mask}`)
    }
  })

  t.test('its listeners are its namespace\'s, never the host\'s ports', async (t) => {
    t.equal(await ask(`/listen?port=${apiPort}`), 'listening', 'the app may bind the API\'s port number, in its own namespace')
    t.equal((await app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200, 'the API still answers')
    t.ok(await hostRefuses(await listenInApp(ask)), 'a port the app listens on is not the host\'s')
  })
})

/** A port free on the host that the app then listens on in its namespace. */
async function listenInApp (ask: (path: string) => Promise<string>): Promise<number> {
  const probe = createServer()
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve))
  const port = (probe.address() as AddressInfo).port
  await new Promise((resolve) => probe.close(resolve))
  if (await ask(`/listen?port=${port}`) !== 'listening') throw new Error('the app could not listen')
  return port
}
