import t from 'tap'
import { connect, createServer, type AddressInfo } from 'node:net'
import { networkInterfaces } from 'node:os'
import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import { systemClock } from '../../../services/platform/clock.js'
import { ProcessDriver, probeSandbox } from '../../../services/hosting/process-driver/index.js'
import { firewallRules, namespaceRoutes, parseIpv4Range, refusedRanges, rangeText } from '../../../services/hosting/network/plan.js'
import { get, RecordingSink } from './driver-harness.js'
import { buildInput, FIXTURES, tempDir } from './process-driver-helpers.js'

/** What an instance's namespace refuses, as data, and an operator's allowance at work on a real instance. */

t.test('the refused ranges: the links to instances, the internal-address table and the host\'s own addresses, less what is allowed', async (t) => {
  const none = refusedRanges({ allowed: [], hostAddresses: ['127.0.0.1', '192.0.2.2', '198.18.40.1', '8.8.4.4'] }).map(rangeText)
  t.equal(none[0], '169.254.0.0/17', 'the links first')
  for (const range of ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '169.254.0.0/16', '100.64.0.0/10', '224.0.0.0/4', '8.8.4.4/32']) t.ok(none.includes(range), range)
  t.notOk(none.includes('127.0.0.0/8'), 'loopback is the app\'s own')
  t.notOk(none.includes('192.0.2.2/32') || none.includes('198.18.40.1/32'), 'a host address inside a refused range needs no rule of its own')

  const allowed = [parseIpv4Range('10.1.0.0/16'), parseIpv4Range('8.8.4.4'), parseIpv4Range('169.254.0.0/16')].map((range) => range as NonNullable<typeof range>)
  const some = refusedRanges({ allowed, hostAddresses: ['8.8.4.4'] }).map(rangeText)
  t.ok(some.includes('10.0.0.0/8'), 'a range that is only partly allowed stays refused, the allowed part routed past it')
  t.notOk(some.includes('8.8.4.4/32'), 'an allowed host address is reachable')
  t.notOk(some.includes('169.254.0.0/16'))
  t.ok(some.includes('169.254.0.0/17'), 'but never the links to instances')
  const rules = firewallRules({ allowed, hostAddresses: [] }, { host: '169.254.0.0' }).split('\n')
  t.ok(rules.indexOf('-A OUTPUT -d 169.254.0.0/17 -j REJECT') < rules.indexOf('-A OUTPUT -d 169.254.0.0/16 -j ACCEPT'), 'the links are refused before any allowance')
  t.ok(rules.includes('-A INPUT -i eth0 -s 169.254.0.0/32 -p tcp --dport 8080 -m conntrack --ctstate NEW -j ACCEPT'), 'new connections come only from the gateway\'s end')
  t.ok(rules.indexOf('-A OUTPUT -o eth0 -m conntrack --ctstate ESTABLISHED -j ACCEPT') < rules.indexOf('-A OUTPUT -o eth0 -j REJECT'), 'the app only answers over its link')
  t.same(namespaceRoutes({ allowed: [], hostAddresses: [] }, { instance: '169.254.0.1' }).slice(-2), ['address add 169.254.0.1/31 dev eth0', 'link set eth0 up'])
  t.equal(parseIpv4Range('10.1.2.3/8')?.network, '10.0.0.0')
  for (const bad of ['10.1.2', '10.0.0.0/33', '::1', '10.0.0.0/8/1', 'x']) t.equal(parseIpv4Range(bad), null, bad)
})

const hostAddress = Object.entries(networkInterfaces()).filter(([name]) => !name.startsWith('plv')).flatMap(([, entries]) => entries ?? [])
  .find((entry) => entry.family === 'IPv4' && !entry.internal)?.address
const probe = probeSandbox({ network: { allowed: hostAddress === undefined ? [] : [{ network: hostAddress, prefix: 32 }] } })

t.test('an address the operator allows is reachable from an instance; the rest stays refused', { skip: (probe.network === null || hostAddress === undefined) && 'no network namespaces, or no address of the host to allow' }, async (t) => {
  const root = join(await tempDir('plinth-hosting-network-', 0o711), 'hosting')
  const driver = new ProcessDriver({ root, clock: systemClock, sandbox: probe, timing: { healthPollMs: 50, logPollMs: 50 } })
  t.teardown(async () => { await driver.stop('allowed', 0); await driver.close(); await rm(join(root, '..'), { recursive: true, force: true }) })
  const server = createServer((socket) => socket.end('allowed service\n'))
  await new Promise<void>((resolve) => server.listen(0, '0.0.0.0', resolve))
  t.teardown(() => server.close())
  const port = (server.address() as AddressInfo).port
  const artifact = await driver.build(buildInput(join(FIXTURES, 'probe-app')))
  const running = await driver.start({ appId: 'a', deploymentId: 'd', instanceId: 'allowed', artifact, env: {}, limits: { memoryMb: 128, cpus: 1, pids: 32 }, healthCheckPath: '/', healthTimeoutMs: 30_000, log: new RecordingSink() })
  const ask = async (path: string): Promise<string> => (await get(running.port, path, running.host)).body
  t.equal(await ask(`/connect?host=${hostAddress as string}&port=${port}`), 'data:allowed service', 'HOSTING_APP_ALLOWED_RANGES lets it through')
  t.equal(await ask(`/connect?host=10.255.255.1&port=${port}`), 'error:EACCES', 'what it does not name stays refused')
  t.equal(await ask(`/connect?host=127.0.0.1&port=${port}`), 'error:ECONNREFUSED', 'the host\'s loopback is still not the app\'s')

  await driver.stop('allowed', 0)
  t.equal(await dial(running.host, running.port), 'EHOSTUNREACH', 'a gone instance\'s link address fails on the host at once, never leaving by its default route')
})

/** What dialing `host:port` from the host gets: an error code, or `connected`; the bound only turns a hang into a failure. */
async function dial (host: string, port: number): Promise<string> {
  return await new Promise((resolve) => {
    const socket = connect({ host, port })
    const done = (answer: string): void => { socket.destroy(); resolve(answer) }
    socket.setTimeout(5000, () => done('no answer'))
    socket.once('connect', () => done('connected'))
    socket.once('error', (error: NodeJS.ErrnoException) => done(error.code ?? error.message))
  })
}
