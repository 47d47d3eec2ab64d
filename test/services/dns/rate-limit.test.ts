import t from 'tap'
import { createSocket } from 'node:dgram'
import * as packet from 'dns-packet'
import { ManualClock } from '../../../services/platform/clock.js'
import { loadConfig } from '../../../services/config.js'
import { ResponseRateLimiter, type RateLimitSettings, type RateVerdict } from '../../../services/dns/rate-limit.js'
import { DnsServer } from '../../../services/dns/server.js'
import { buildTestApp } from '../../helper.js'
import { dig } from './dig.js'

const settings = (overrides: Partial<RateLimitSettings> = {}): RateLimitSettings => ({ responsesPerSecond: 4, slip: 2, ipv4Prefix: 24, ipv6Prefix: 56, exempt: [], ...overrides })
const verdicts = (limiter: ResponseRateLimiter, address: string, count: number): RateVerdict[] => Array.from({ length: count }, () => limiter.judge(address))

t.test('per client network: an account refilled at the rate, past it dropped with every slip-th answer truncated', async (t) => {
  const clock = new ManualClock()
  const limiter = new ResponseRateLimiter(settings(), () => clock.nowMs())
  t.same(verdicts(limiter, '192.0.2.1', 9), ['answer', 'answer', 'answer', 'answer', 'drop', 'slip', 'drop', 'slip', 'drop'])
  t.same(verdicts(limiter, '192.0.2.200', 1), ['slip'], 'the same /24 shares the account')
  t.same(verdicts(limiter, '::ffff:192.0.2.7', 1), ['drop'], 'an IPv4 client seen on an IPv6 socket too')
  t.same(verdicts(limiter, '192.0.3.1', 1), ['answer'], 'another /24 has its own')
  clock.advance(500)
  t.same(verdicts(limiter, '192.0.2.1', 3), ['answer', 'answer', 'slip'], 'half a second refills half the rate')
  clock.advance(60_000)
  t.same(verdicts(limiter, '192.0.2.1', 5).filter((verdict) => verdict === 'answer').length, 4, 'never more than one second\'s worth at once')

  t.same(verdicts(limiter, '2001:db8:0:ff::1', 4), ['answer', 'answer', 'answer', 'answer'])
  t.same(verdicts(limiter, '2001:db8:0:80::2', 1), ['drop'], 'the same /56')
  t.same(verdicts(limiter, '2001:db8:0:100::1', 1), ['answer'], 'the next /56')

  const exempt = new ResponseRateLimiter(settings({ exempt: ['127.0.0.1', '198.51.100.0/24', '2001:db8::/32'] }), () => clock.nowMs())
  for (const address of ['127.0.0.1', '198.51.100.9', '2001:db8:1::1']) t.ok(verdicts(exempt, address, 50).every((verdict) => verdict === 'answer'), `${address} is exempt`)
  t.same(verdicts(exempt, '127.0.0.2', 5).at(-1), 'drop', 'its neighbours are not')
  t.same(verdicts(new ResponseRateLimiter(settings({ slip: 0 }), () => clock.nowMs()), '192.0.2.1', 8).slice(4), ['drop', 'drop', 'drop', 'drop'], 'slip 0: nothing truncated')
  t.ok(verdicts(new ResponseRateLimiter(settings({ responsesPerSecond: 0 }), () => clock.nowMs()), '192.0.2.1', 100).every((verdict) => verdict === 'answer'), '0 switches it off')
})

t.test('on by default, configured by DNS_RRL_*, refused with the variable named', async (t) => {
  t.same(loadConfig({ DATA_DIR: '/tmp/unused' }).dns.rateLimit, { responsesPerSecond: 50, slip: 2, ipv4Prefix: 24, ipv6Prefix: 56, exempt: [] })
  t.same(loadConfig({ DNS_RRL_RESPONSES_PER_SECOND: '0', DNS_RRL_SLIP: '1', DNS_RRL_IPV4_PREFIX: '32', DNS_RRL_IPV6_PREFIX: '64', DNS_RRL_EXEMPT: '127.0.0.1, 10.0.0.0/8,::1' }).dns.rateLimit,
    { responsesPerSecond: 0, slip: 1, ipv4Prefix: 32, ipv6Prefix: 64, exempt: ['127.0.0.1', '10.0.0.0/8', '::1'] })
  const bad: Array<[string, string]> = [
    ['DNS_RRL_RESPONSES_PER_SECOND', 'lots'], ['DNS_RRL_SLIP', '11'], ['DNS_RRL_IPV4_PREFIX', '33'], ['DNS_RRL_IPV6_PREFIX', '8'],
    ['DNS_RRL_EXEMPT', 'localhost'], ['DNS_RRL_EXEMPT', '10.0.0.0/33'], ['DNS_RRL_EXEMPT', '10.0.0.0/8/1']
  ]
  for (const [name, value] of bad) t.throws(() => loadConfig({ [name]: value }), { message: new RegExp(name) }, `${name}=${value}`)
})

t.test('over real UDP: answers past the rate are dropped or come back truncated, and TCP still answers', async (t) => {
  const app = await buildTestApp(t)
  const zone = await app.dns.zones.create('proj1', { name: 'example.com' })
  await app.dns.records.change(zone, { create: [{ name: 'www', type: 'TXT', content: 'x'.repeat(1000) }] })
  const clock = new ManualClock()
  const server = new DnsServer(app.dns.builtin, { axfrAllow: [], rateLimiter: new ResponseRateLimiter(settings(), () => clock.nowMs()) })
  const port = await server.listen(0, '127.0.0.1')
  t.teardown(async () => { await server.close() })

  const client = createSocket('udp4')
  t.teardown(() => client.close())
  const waiting = new Map<number, (reply: packet.Packet) => void>()
  const strays: number[] = []
  client.on('message', (message) => {
    const reply = packet.decode(message)
    const resolve = waiting.get(reply.id ?? -1)
    if (resolve === undefined) strays.push(reply.id ?? -1)
    else resolve(reply)
  })
  const query = (id: number): Buffer => packet.encode({ id, type: 'query', flags: packet.RECURSION_DESIRED, questions: [{ name: 'www.example.com', type: 'TXT' }], additionals: [{ name: '.', type: 'OPT', udpPayloadSize: 1232 } as unknown as packet.Answer] })
  const send = async (id: number, reply: boolean): Promise<packet.Packet | null> => {
    const answered = reply ? new Promise<packet.Packet>((resolve) => waiting.set(id, resolve)) : null
    await new Promise<void>((resolve, reject) => client.send(query(id), port, '127.0.0.1', (error) => error === null || error === undefined ? resolve() : reject(error)))
    return answered === null ? null : await answered
  }

  // The clock stands still: four answers, then every other one truncated and the rest dropped.
  const expected: RateVerdict[] = ['answer', 'answer', 'answer', 'answer', 'drop', 'slip', 'drop', 'slip', 'drop', 'slip']
  for (const [i, verdict] of expected.entries()) {
    const reply = await send(i + 1, verdict !== 'drop')
    if (verdict === 'answer') t.ok(reply !== null && reply.answers?.length === 1 && (reply.flags! & packet.TRUNCATED_RESPONSE) === 0, `query ${i + 1} answered whole`)
    if (verdict === 'slip') {
      t.ok(reply !== null && (reply.flags! & packet.TRUNCATED_RESPONSE) !== 0, `query ${i + 1} answered truncated (TC)`)
      t.same([reply?.answers, reply?.questions?.[0]?.name], [[], 'www.example.com'], 'with the question and no records')
    }
  }
  const overTcp = await dig(port, 'www.example.com', 'TXT', '+tcp')
  t.same([overTcp.status, overTcp.answer.length], ['NOERROR', 1], 'TCP answers whatever the UDP rate')

  clock.advance(1000)
  t.equal((await send(100, true))?.answers?.length, 1, 'a second later the network is answered again')
  t.same(strays, [], 'no dropped query was answered')
})
