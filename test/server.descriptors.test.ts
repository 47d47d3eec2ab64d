import t from 'tap'
import { spawn } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { connect, type Socket } from 'node:net'
import { setTimeout as delay } from 'node:timers/promises'
import { tempDir } from './helper.js'

/**
 * The whole server under a small open file limit, as `npm start` runs it
 * (prlimit sets the limit before exec, so the server is the process that
 * gets it): the soft limit is raised to the hard one at start, a flood of partial requests to the
 * gateway is refused past the gateway's share while the API answers, the
 * gateway gives way near the limit, and once every descriptor is taken and
 * given back the API, the gateway, git over SSH and DNS over TCP all answer
 * again, the process never having exited.
 */

const ROOT = new URL('..', import.meta.url).pathname
const SOFT = 160
const HARD = 400

interface Server { pid: number, exited: () => boolean, lines: () => Array<Record<string, unknown>>, stderr: () => string, stop: () => Promise<void> }

async function startServer (t: Parameters<typeof tempDir>[0]): Promise<Server> {
  const child = spawn('prlimit', [`--nofile=${SOFT}:${HARD}`, process.execPath, '--import', 'tsx', 'server.ts'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, PORT: '0', GATEWAY_PORT: '0', GIT_SSH_PORT: '0', DNS_PORT: '0', DATA_DIR: tempDir(t), LOG_LEVEL: 'info', WORKERS: '1', HEADERS_TIMEOUT_SECONDS: '120' },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk: Buffer) => { stdout += chunk.toString() })
  child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
  const lines = () => stdout.split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as Record<string, unknown>)
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return
    const exited = new Promise((resolve) => child.once('exit', resolve))
    child.kill('SIGKILL')
    await exited
  }
  t.teardown(stop)
  for (let waited = 0; !/Server listening at/.test(stdout); waited += 50) {
    if (child.exitCode !== null || waited > 60_000) throw new Error(`the server did not start: ${stdout} ${stderr}`)
    await delay(50)
  }
  return { pid: child.pid as number, exited: () => child.exitCode !== null || child.signalCode !== null, lines, stderr: () => stderr, stop }
}

/** A connection that sent half a request head and waits; `closed` once the server closes it. */
class Partial {
  received = 0
  closed = false
  constructor (readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => { this.received += chunk.length })
    socket.on('error', () => {})
    socket.on('close', () => { this.closed = true })
  }

  static async open (port: number, localAddress: string): Promise<Partial> {
    const socket = connect({ port, host: '127.0.0.1', localAddress })
    const one = new Partial(socket)
    await new Promise((resolve) => socket.once('connect', resolve).once('close', resolve))
    if (!socket.destroyed) socket.write('GET / HTTP/1.1\r\nHost: nobody.example\r\nX-Slow: ')
    return one
  }
}

const openDescriptors = (pid: number) => readdirSync(`/proc/${pid}/fd`).length

async function until (what: string, check: () => boolean | Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await delay(50)
  }
}

/** The status of a GET on a fresh connection (a kept-alive one would need no new descriptor), or null when it is closed unanswered. */
async function statusOf (port: number, path: string, host = 'plinth.test'): Promise<number | null> {
  return await new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(`GET ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`))
    let received = ''
    socket.setTimeout(5000, () => socket.destroy())
    socket.on('error', () => {})
    socket.on('data', (chunk: Buffer) => { received += chunk.toString('latin1') })
    socket.once('close', () => resolve(/^HTTP\/1\.1 (\d{3}) /.exec(received) === null ? null : Number(/^HTTP\/1\.1 (\d{3}) /.exec(received)?.[1])))
  })
}

/** The first bytes a server sends on a new connection, or null when it closes without a byte. */
async function greeting (port: number): Promise<string | null> {
  return await new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1')
    socket.on('error', () => {})
    socket.once('data', (chunk: Buffer) => { socket.destroy(); resolve(chunk.toString('latin1')) })
    socket.once('close', () => resolve(null))
  })
}

/** A DNS query over TCP (two-byte length framing); the id of the answer, or null when the connection closes unanswered. */
async function dnsOverTcp (port: number): Promise<number | null> {
  const name = Buffer.concat([...['example', 'com'].map((label) => Buffer.concat([Buffer.from([label.length]), Buffer.from(label)])), Buffer.from([0])])
  const query = Buffer.concat([Buffer.from([0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]), name, Buffer.from([0, 1, 0, 1])])
  return await new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(Buffer.concat([Buffer.from([0, query.length]), query])))
    let received = Buffer.alloc(0)
    socket.on('error', () => {})
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk])
      if (received.length >= 4) { socket.destroy(); resolve(received.readUInt16BE(2)) }
    })
    socket.once('close', () => resolve(null))
  })
}

t.test('a small open file limit: raised at start, the gateway kept to its share, giving way near the limit, and all answers again after running out', async (t) => {
  const server = await startServer(t)
  const line = (message: string) => server.lines().find((entry) => entry.msg === message)
  t.match(line('open file limit (RLIMIT_NOFILE)'), { soft: HARD, hard: HARD }, 'started with a soft limit under the hard one, the server runs with the hard one (Node raises it), and logs it')
  t.match(readFileSync(`/proc/${server.pid}/limits`, 'utf8'), new RegExp(`Max open files\\s+${HARD}\\s+${HARD}`), 'as the kernel says')
  const gatewayLine = line('hosting gateway listening') as { port: number, maxConnections: number, maxConnectionsPerAddress: number }
  t.same([gatewayLine.maxConnections, gatewayLine.maxConnectionsPerAddress], [150, 150], 'the gateway\'s share: two descriptors a connection in what the headroom leaves')
  t.match(line('gateway connections (GATEWAY_MAX_CONNECTIONS) lowered to fit the open file limit'), { configured: 10_000, maxConnections: 150 })
  const api = String(server.lines().find((entry) => String(entry.msg).startsWith('Server listening at '))?.msg).slice('Server listening at '.length)
  const apiPort = Number(new URL(api).port)
  const gateway = gatewayLine.port
  const ssh = (line('git over SSH listening') as { port: number }).port
  const dns = (line('DNS server listening on UDP and TCP') as { port: number }).port
  t.equal(await statusOf(apiPort, '/healthz'), 200)

  // One client floods the gateway with partial requests from two addresses: more than the process has descriptors.
  const flood: Partial[] = []
  t.teardown(() => { for (const one of flood) one.socket.destroy() })
  for (let i = 0; i < 2 * 220; i++) flood.push(await Partial.open(gateway, i < 220 ? '127.0.0.1' : '127.0.0.2'))
  await until('the refused connections to close', () => flood.filter((one) => one.closed).length >= flood.length - 150)
  const held = flood.filter((one) => !one.closed)
  t.equal(held.length, 150, 'the gateway holds its share and closes the rest as they arrive')
  t.ok(flood.filter((one) => one.closed).every((one) => one.received === 0), 'without a byte')
  t.ok(openDescriptors(server.pid) < HARD - 100, 'the headroom is left')
  t.equal(await statusOf(apiPort, '/healthz'), 200, 'the API answers while the gateway is full')
  const signIn = await fetch(`${api}/api/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json', connection: 'close' }, body: JSON.stringify({ email: 'ann@example.com', password: 'not her password' }) })
  t.equal(signIn.status, 401, 'sign-in works')
  for (const one of flood) one.socket.destroy()
  await until('the gateway to serve again', async () => (await statusOf(gateway, '/', 'nobody.example')) === 404)

  // The API takes descriptors (it has no connection limit) until the process is near its limit: the gateway gives way.
  const apiFlood: Partial[] = []
  t.teardown(() => { for (const one of apiFlood) one.socket.destroy() })
  while (openDescriptors(server.pid) < HARD - 60) apiFlood.push(await Partial.open(apiPort, '127.0.0.3'))
  t.equal(await greeting(gateway), null, 'near the limit, a new gateway connection is closed at once')
  t.equal(await statusOf(apiPort, '/healthz'), 200, 'while the API still has room')
  // The log comes through a pipe, maybe after the refusal it explains.
  await until('the gateway to say why', () => line('near the open file limit: the gateway refuses new connections and closes idle ones') !== undefined)
  t.pass('and the gateway said why')

  // Then every descriptor: nothing can be accepted anywhere, and the process stays.
  for (let i = 0; i < 120; i++) apiFlood.push(await Partial.open(apiPort, '127.0.0.4'))
  await until('the process to run out', () => openDescriptors(server.pid) >= HARD)
  t.same([await statusOf(apiPort, '/healthz'), await greeting(ssh), await dnsOverTcp(dns)], [null, null, null], 'out of descriptors: the API, SSH and DNS over TCP accept nothing')
  t.notOk(server.exited(), 'the server is still running')

  for (const one of apiFlood) one.socket.destroy()
  await until('the API to answer', async () => (await statusOf(apiPort, '/healthz')) === 200)
  await until('the gateway to answer', async () => (await statusOf(gateway, '/', 'nobody.example')) === 404)
  t.match(await greeting(ssh), /^SSH-2\.0-Plinth/, 'git over SSH greets')
  t.equal(await dnsOverTcp(dns), 0x1234, 'DNS over TCP answers')
  t.notOk(server.exited(), 'the same process throughout')
  t.notMatch(server.stderr(), /EMFILE|ENFILE/, 'nothing uncaught')
  t.notOk(server.lines().some((entry) => entry.level === 60), 'nothing fatal logged')
})
