import t from 'tap'
import { closeSync, openSync } from 'node:fs'
import { connect, type Socket } from 'node:net'
import { setTimeout as delay } from 'node:timers/promises'
import { clientKey, limitsWithin } from '../../../services/hosting/gateway/admission.js'
import { descriptorHeadroom } from '../../../services/platform/descriptors.js'
import { startGateway } from './gateway-harness.js'

/**
 * What one client can hold of the gateway: connections in all and per
 * client, the time it may take over its headers, and what it gets when the
 * process runs short of descriptors. Real partial requests over loopback,
 * from several local addresses (Linux routes all of 127.0.0.0/8 to lo).
 */

/** A connection that sent half a request head, as a slow or hostile client does. */
class Partial {
  received = ''
  readonly closed: Promise<void>
  constructor (readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => { this.received += chunk.toString('latin1') })
    socket.on('error', () => {})
    this.closed = new Promise((resolve) => socket.once('close', () => resolve()))
  }

  static async open (port: number, localAddress = '127.0.0.1'): Promise<Partial> {
    const socket = connect({ port, host: '127.0.0.1', localAddress })
    await new Promise((resolve, reject) => socket.once('connect', resolve).once('error', reject))
    socket.write('GET / HTTP/1.1\r\nHost: nobody.example\r\nX-Slow: ')
    return new Partial(socket)
  }

  /** Sends the rest of the head: an admitted connection is answered (404, no such app) and kept. */
  async finish (): Promise<string> {
    this.socket.write('1\r\n\r\n')
    while (!/\r\n\r\n[^]*<\/html>\n$/.test(this.received)) {
      if (this.socket.destroyed) throw new Error(`closed after ${JSON.stringify(this.received)}`)
      await new Promise((resolve) => this.socket.once('data', resolve).once('close', resolve))
    }
    return this.received.split('\r\n')[0]
  }
}

t.test('clients are counted by address, and by /64 for IPv6', async (t) => {
  const cases: Array<[string, string]> = [
    ['192.0.2.7', '192.0.2.7'],
    ['::ffff:192.0.2.7', '192.0.2.7'],
    ['2001:db8:1:2:aaaa::1', '2001:db8:1:2::/64'],
    ['2001:db8:1:2:bbbb:cccc:dddd:eeee', '2001:db8:1:2::/64'],
    ['2001:db8:1:3::1', '2001:db8:1:3::/64'],
    ['64:ff9b::203.0.113.5', '203.0.113.5'],
    ['fe80::1%eth0', 'fe80:0:0:0::/64']
  ]
  for (const [address, key] of cases) t.equal(clientKey(address), key, address)
})

t.test('the limits fit the descriptor limit, leaving the headroom to the rest of the server', async (t) => {
  const configured = { maxConnections: 10_000, maxConnectionsPerAddress: 256 }
  t.same(limitsWithin(configured, null), configured, 'no known limit: as configured')
  t.same(limitsWithin(configured, 1_048_576), configured, 'a large limit: as configured')
  t.same([descriptorHeadroom(1024), limitsWithin(configured, 1024)], [256, { maxConnections: 384, maxConnectionsPerAddress: 256 }], 'two descriptors a connection in what is left')
  t.same(limitsWithin(configured, 400), { maxConnections: 150, maxConnectionsPerAddress: 150 })
  t.same(limitsWithin(configured, 20_000), { maxConnections: 7952, maxConnectionsPerAddress: 256 })
  t.same(limitsWithin(configured, 10), { maxConnections: 1, maxConnectionsPerAddress: 1 }, 'never none')
})

t.test('connections past the limits in all and per client are closed as they arrive; a closed one makes room', async (t) => {
  const { port } = await startGateway(t, { connectionLimits: { maxConnections: 6, maxConnectionsPerAddress: 4 } })
  const opened: Partial[] = []
  t.teardown(() => { for (const one of opened) one.socket.destroy() })
  const open = async (address: string) => { const one = await Partial.open(port, address); opened.push(one); return one }

  const first = [] as Partial[]
  for (let i = 0; i < 6; i++) first.push(await open('127.0.0.1'))
  await Promise.all(first.slice(4).map(async (one) => await one.closed))
  t.same(first.slice(4).map((one) => one.received), ['', ''], 'past 4 from one address: closed without a byte')
  for (const one of first.slice(0, 4)) t.equal(await one.finish(), 'HTTP/1.1 404 Not Found', 'the first 4 were kept and are answered')

  const second = [] as Partial[]
  for (let i = 0; i < 3; i++) second.push(await open('127.0.0.2'))
  await second[2].closed
  t.equal(second[2].received, '', 'past 6 in all: closed, whatever the address')
  for (const one of second.slice(0, 2)) t.equal(await one.finish(), 'HTTP/1.1 404 Not Found', 'another address has its own share of the rest')

  first[0].socket.destroy()
  let admitted: Partial | null = null
  // The gateway counts the connection gone once its close reaches it; until then a newcomer is still refused.
  for (let attempt = 0; admitted === null && attempt < 50; attempt++) {
    const one = await open('127.0.0.3')
    const outcome = await Promise.race([one.closed.then(() => 'closed'), one.finish()])
    if (outcome === 'closed') await delay(20)
    else admitted = one
  }
  t.ok(admitted, 'a connection that closed makes room for another')
})

t.test('a client that stalls its head (or its TLS handshake) is closed at the header limit, freeing its place', async (t) => {
  const { port, tlsPort } = await startGateway(t, { tls: true, connectionLimits: { maxConnections: 3, maxConnectionsPerAddress: 3 }, clientTimeouts: { headersMs: 1000, requestMs: 2000, checkEveryMs: 250 } })
  const stalled = await Partial.open(port)
  const silent = new Partial(connect(port, '127.0.0.1'))
  const handshake = new Partial(connect(tlsPort as number, '127.0.0.1'))
  await Promise.all([stalled.closed, silent.closed, handshake.closed])
  t.match(stalled.received, /^HTTP\/1\.1 408 /, 'half a head: 408')
  t.match(silent.received, /^HTTP\/1\.1 408 /, 'nothing at all: 408')
  t.equal(handshake.received, '', 'a TLS handshake never begun is closed at the same limit')
  let answered: string | null = null
  for (let attempt = 0; answered === null && attempt < 50; attempt++) {
    const one = await Partial.open(port)
    t.teardown(() => one.socket.destroy())
    answered = await Promise.race([one.closed.then(() => null), one.finish()])
    if (answered === null) await delay(20)
  }
  t.equal(answered, 'HTTP/1.1 404 Not Found', 'their places are free again')
})

/** The descriptor the next open gets: every one below it is taken. */
function lowestFree (): number {
  const fd = openSync('/dev/null', 'r')
  closeSync(fd)
  return fd
}

/** A soft limit at which the gateway counts `threshold` and above as near it. */
function limitNearAt (threshold: number): number {
  let limit = threshold
  while (limit - descriptorHeadroom(limit) < threshold) limit++
  return limit
}

t.test('near the descriptor limit, new connections are refused and idle ones closed, until there is room again', async (t) => {
  const warnings: Array<{ details: object, message: string }> = []
  // Near once 40 more descriptors are taken than now; the test's client and the gateway share this process.
  const { port } = await startGateway(t, { descriptorLimit: limitNearAt(lowestFree() + 40), log: { warn: (details, message) => warnings.push({ details, message }) } })
  const idle = await Partial.open(port)
  t.equal(await idle.finish(), 'HTTP/1.1 404 Not Found', 'served while there is room; kept alive')

  const held: number[] = []
  t.teardown(() => { for (const fd of held.splice(0)) closeSync(fd) })
  for (let i = 0; i < 60; i++) held.push(openSync('/dev/null', 'r'))
  const refused = await Partial.open(port)
  await refused.closed
  t.equal(refused.received, '', 'a new connection near the limit is closed without a byte')
  await idle.closed
  t.pass('the idle kept-alive connection was let go')
  const near = () => warnings.filter((warning) => /^near the open file limit: the gateway refuses new connections and closes idle ones$/.test(warning.message))
  t.equal(near().length, 1, 'said')
  t.match(warnings[0], { message: 'gateway connections (GATEWAY_MAX_CONNECTIONS) lowered to fit the open file limit', details: { configured: 10_000 } }, 'as was the lowering of the limits to fit so small a limit')

  for (const fd of held.splice(0)) closeSync(fd)
  let answered: string | null = null
  for (let attempt = 0; answered === null && attempt < 100; attempt++) {
    const one = await Partial.open(port)
    t.teardown(() => one.socket.destroy())
    answered = await Promise.race([one.closed.then(() => null), one.finish()])
    if (answered === null) await delay(50)
  }
  t.equal(answered, 'HTTP/1.1 404 Not Found', 'once descriptors are free again, after the back-off, connections are served')
  t.equal(near().length, 1, 'once for the episode')
})
