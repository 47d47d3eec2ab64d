import t, { type Test } from 'tap'
import { createSocket } from 'node:dgram'
import * as packet from 'dns-packet'
import { buildTestApp } from '../../helper.js'
import { DnsServer } from '../../../services/dns/server.js'
import { dig, digTransfer, type DigAnswer } from './dig.js'

/**
 * The built-in server answering the real `dig` over UDP and TCP, on a port
 * of its own (DNS_PORT=0), from records written through the services.
 */
async function served (t: Test, env: Record<string, string> = {}) {
  const app = await buildTestApp(t, { env: { DNS_PORT: '0', ...env } })
  const zone = await app.dns.zones.create('proj1', { name: 'example.com' })
  await app.dns.records.change(zone, {
    create: [
      { name: 'www', type: 'A', ttl: 300, content: '192.0.2.1' },
      { name: 'www', type: 'A', ttl: 300, content: '192.0.2.2' },
      { name: 'v6', type: 'AAAA', content: '2001:db8::1' },
      { name: 'alias', type: 'CNAME', content: 'www.example.com' },
      { name: 'chain', type: 'CNAME', content: 'alias.example.com' },
      { name: 'away', type: 'CNAME', content: 'www.example.net' },
      { name: 'dangling', type: 'CNAME', content: 'missing.example.com' },
      { name: '*.dev', type: 'A', content: '192.0.2.50' },
      { name: 'fixed.dev', type: 'TXT', content: 'not the wildcard' },
      { name: '@', type: 'MX', content: '10 mail.example.com' },
      { name: 'mail', type: 'A', content: '192.0.2.25' },
      { name: '_sip._tcp', type: 'SRV', content: '0 5 5060 sip.example.com' },
      { name: '@', type: 'CAA', content: '0 issue "letsencrypt.org"' },
      { name: 'long', type: 'TXT', content: 'a'.repeat(255) + 'b'.repeat(255) + 'c'.repeat(10) },
      { name: 'sub', type: 'NS', content: 'ns.sub.example.com' },
      { name: 'ns.sub', type: 'A', content: '192.0.2.53' },
      ...Array.from({ length: 12 }, (_, i) => ({ name: 'huge', type: 'TXT' as const, content: `${i}-${'z'.repeat(200)}` }))
    ]
  })
  const address = app.dns.server.address()
  if (address === null) throw new Error('the DNS server is not listening')
  return { app, zone, port: address.port }
}

/** The same question over UDP and TCP: both must give `expect` the same verdict. */
async function both (t: Test, port: number, name: string, type: string, expect: (answer: DigAnswer, via: string) => void): Promise<void> {
  for (const via of ['+notcp', '+tcp']) expect(await dig(port, name, type, via), `${name} ${type} ${via}`)
}

const SOA = /^example\.com\. 300 IN SOA ns1\.plinth\.localhost\. hostmaster\.example\.com\. \d{10} 7200 3600 1209600 300$/

t.test('answers, negative answers, CNAMEs, wildcards and case', async (t) => {
  const { port } = await served(t)
  await both(t, port, 'www.example.com', 'A', (a, via) => {
    t.same([a.status, a.flags.includes('aa')], ['NOERROR', true], via)
    t.same(a.answer.sort(), ['www.example.com. 300 IN A 192.0.2.1', 'www.example.com. 300 IN A 192.0.2.2'], via)
  })
  await both(t, port, 'WwW.ExAmPlE.CoM', 'A', (a, via) => t.equal(a.answer.length, 2, `case does not matter: ${via}`))
  await both(t, port, 'nope.example.com', 'A', (a, via) => {
    t.same([a.status, a.answer], ['NXDOMAIN', []], via)
    t.match(a.authority, [SOA], `NXDOMAIN carries the SOA: ${via}`)
  })
  await both(t, port, 'www.example.com', 'AAAA', (a, via) => {
    t.same([a.status, a.answer], ['NOERROR', []], `NODATA: ${via}`)
    t.match(a.authority, [SOA], via)
  })
  await both(t, port, '_tcp.example.com', 'A', (a, via) => t.same([a.status, a.answer.length, a.authority.length], ['NOERROR', 0, 1], `an empty non-terminal exists: ${via}`))
  await both(t, port, 'chain.example.com', 'A', (a, via) => t.same(a.answer.slice(0, 2), ['chain.example.com. 3600 IN CNAME alias.example.com.', 'alias.example.com. 3600 IN CNAME www.example.com.'], `chased: ${via}`) && t.equal(a.answer.length, 4))
  await both(t, port, 'away.example.com', 'A', (a, via) => t.same(a.answer, ['away.example.com. 3600 IN CNAME www.example.net.'], `not chased out of the zone: ${via}`))
  await both(t, port, 'dangling.example.com', 'A', (a, via) => t.same([a.status, a.answer.length], ['NXDOMAIN', 1], `a CNAME to nothing: ${via}`))
  await both(t, port, 'alias.example.com', 'CNAME', (a, via) => t.same(a.answer, ['alias.example.com. 3600 IN CNAME www.example.com.'], via))
  await both(t, port, 'anything.dev.example.com', 'A', (a, via) => t.same(a.answer, ['anything.dev.example.com. 3600 IN A 192.0.2.50'], `wildcard: ${via}`))
  await both(t, port, 'a.b.dev.example.com', 'A', (a, via) => t.same(a.answer, ['a.b.dev.example.com. 3600 IN A 192.0.2.50'], `wildcard, deeper: ${via}`))
  await both(t, port, 'fixed.dev.example.com', 'A', (a, via) => t.same([a.status, a.answer], ['NOERROR', []], `an existing name is not covered by the wildcard: ${via}`))
  t.same((await dig(port, 'www.example.com', 'ANY', '+notcp')).answer.length, 2, 'ANY over UDP: one record set (RFC 8482)')
  t.same((await dig(port, 'example.com', 'ANY', '+tcp')).answer.map((line) => line.split(' ')[3]).sort(), ['CAA', 'MX', 'NS', 'NS', 'SOA'], 'ANY over TCP: all of them')
  await both(t, port, 'other.example.org', 'A', (a, via) => t.same([a.status, a.flags.includes('aa')], ['REFUSED', false], `not ours: ${via}`))
})

t.test('every type, long TXT strings and glue', async (t) => {
  const { port } = await served(t)
  const expected: Array<[string, string, string[]]> = [
    ['v6.example.com', 'AAAA', ['v6.example.com. 3600 IN AAAA 2001:db8::1']],
    ['example.com', 'MX', ['example.com. 3600 IN MX 10 mail.example.com.']],
    ['example.com', 'NS', ['example.com. 3600 IN NS ns1.plinth.localhost.', 'example.com. 3600 IN NS ns2.plinth.localhost.']],
    ['_sip._tcp.example.com', 'SRV', ['_sip._tcp.example.com. 3600 IN SRV 0 5 5060 sip.example.com.']],
    ['example.com', 'CAA', ['example.com. 3600 IN CAA 0 issue "letsencrypt.org"']],
    ['long.example.com', 'TXT', [`long.example.com. 3600 IN TXT "${'a'.repeat(255)}" "${'b'.repeat(255)}" "cccccccccc"`]]
  ]
  for (const [name, type, answer] of expected) await both(t, port, name, type, (a, via) => t.same(a.answer.sort(), answer, via))
  await both(t, port, 'example.com', 'SOA', (a, via) => t.match(a.answer, [/^example\.com\. 3600 IN SOA ns1\.plinth\.localhost\. hostmaster\.example\.com\. \d{10} 7200 3600 1209600 300$/], via))
  await both(t, port, 'example.com', 'MX', (a, via) => t.same(a.additional, ['mail.example.com. 3600 IN A 192.0.2.25'], `the exchange's address comes along: ${via}`))
  await both(t, port, 'host.sub.example.com', 'A', (a, via) => {
    t.same([a.status, a.flags.includes('aa'), a.answer], ['NOERROR', false, []], `a referral below a delegation: ${via}`)
    t.same(a.authority, ['sub.example.com. 3600 IN NS ns.sub.example.com.'], via)
    t.same(a.additional, ['ns.sub.example.com. 3600 IN A 192.0.2.53'], via)
  })
})

t.test('too large for UDP: truncated there, whole over TCP', async (t) => {
  const { port } = await served(t)
  const udp = await dig(port, 'huge.example.com', 'TXT', '+notcp', '+ignore')
  t.ok(udp.flags.includes('tc'), `TC set: ${udp.flags.join(' ')}`)
  t.same(udp.answer, [])
  const small = await dig(port, 'huge.example.com', 'TXT', '+notcp', '+ignore', '+noedns')
  t.ok(small.flags.includes('tc'), 'without EDNS the limit is 512 bytes')
  t.equal((await dig(port, 'www.example.com', 'A', '+notcp', '+ignore', '+noedns')).flags.includes('tc'), false, 'a small answer is not truncated')
  const tcp = await dig(port, 'huge.example.com', 'TXT', '+tcp')
  t.equal(tcp.answer.length, 12, 'all of it over TCP')
  const retried = await dig(port, 'huge.example.com', 'TXT', '+notcp')
  t.equal(retried.answer.length, 12, 'dig retries over TCP on TC and gets it all')
})

t.test('the serial moves on every change, and the answers with it', async (t) => {
  const { app, zone, port } = await served(t)
  const serial = async () => Number((await dig(port, 'example.com', 'SOA', '+tcp')).answer[0].split(' ')[6])
  const first = await serial()
  const [www] = await app.dns.records.list(zone, { name: 'www.example.com', type: 'A' })
  await app.dns.records.delete(zone, www.id)
  t.equal(await serial(), first + 1)
  t.same((await dig(port, 'www.example.com', 'A')).answer, ['www.example.com. 300 IN A 192.0.2.2'])
  await app.dns.zones.delete(zone)
  t.equal((await dig(port, 'www.example.com', 'A')).status, 'REFUSED', 'a deleted zone is no longer served')
})

t.test('zone transfers: refused unless the address is allowed, and then whole', async (t) => {
  const refused = await served(t)
  t.match(await digTransfer(refused.port, 'example.com'), /Transfer failed/)
  const allowed = await served(t, { DNS_AXFR_ALLOW: '127.0.0.1' })
  const transfer = await digTransfer(allowed.port, 'example.com')
  const lines = transfer.split('\n').filter((line) => line !== '' && !line.startsWith(';'))
  t.equal(lines.filter((line) => /\tSOA\t/.test(line)).length, 2, 'begins and ends with the SOA')
  t.equal(lines.length, 1 + 2 + 28 + 1, 'SOA, NS, every record, SOA')
  // dig always transfers over TCP, so the UDP refusal is asked of the server directly.
  const [overUdp] = await allowed.app.dns.server.respond(packet.encode({ id: 7, type: 'query', questions: [{ name: 'example.com', type: 'AXFR', class: 'IN' }] }), 'udp', '127.0.0.1')
  t.equal(overUdp.readUInt16BE(2) & 0xf, 5, 'never over UDP: REFUSED')
  t.match(await digTransfer(allowed.port, 'www.example.com'), /Transfer failed/, 'only at a zone\'s apex')
})

t.test('past 64 KB: a transfer is cut into messages, an answer set is truncated even over TCP', async (t) => {
  const { app, zone, port } = await served(t, { DNS_AXFR_ALLOW: '127.0.0.1' })
  const big = Array.from({ length: 40 }, (_, i) => ({ name: 'wide', type: 'TXT' as const, content: `${i}-${'w'.repeat(3990)}` }))
  await app.dns.records.change(zone, { create: big })
  const transfer = await digTransfer(port, 'example.com')
  t.match(transfer, /XFR size: 72 records \(messages [3-9],/, 'every record arrives, over several messages')
  const tcp = await dig(port, 'wide.example.com', 'TXT', '+tcp', '+ignore')
  t.same([tcp.status, tcp.flags.includes('tc'), tcp.answer.length], ['NOERROR', true, 0], '160 KB of TXT does not fit one TCP message')
  t.equal((await dig(port, 'www.example.com', 'A', '+tcp')).answer.length, 2, 'and the server still answers')
})

t.test('malformed and odd messages', async (t) => {
  const { app } = await served(t)
  const server = app.dns.server
  t.same(await server.respond(Buffer.from([1, 2, 3]), 'udp', '127.0.0.1'), [], 'shorter than a header: no answer')
  const [formerr] = await server.respond(Buffer.from([0xab, 0xcd, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0, 9, 9]), 'udp', '127.0.0.1')
  t.same([formerr.readUInt16BE(0), formerr.readUInt16BE(2) & 0xf], [0xabcd, 1], 'an unreadable question: FORMERR with the id')
  const rcode = (reply: Buffer) => reply.readUInt16BE(2) & 0xf
  const notify = packet.encode({ id: 3, type: 'query', flags: 4 << 11, questions: [{ name: 'example.com', type: 'SOA', class: 'IN' }] })
  t.equal(rcode((await server.respond(notify, 'udp', '127.0.0.1'))[0]), 4, 'NOTIFY and other opcodes: NOTIMP')
  const two = packet.encode({ id: 4, type: 'query', questions: [{ name: 'example.com', type: 'A', class: 'IN' }, { name: 'www.example.com', type: 'A', class: 'IN' }] })
  t.equal(rcode((await server.respond(two, 'udp', '127.0.0.1'))[0]), 1, 'two questions: FORMERR')
  const chaos = packet.encode({ id: 5, type: 'query', questions: [{ name: 'www.example.com', type: 'TXT', class: 'CH' }] })
  t.equal(rcode((await server.respond(chaos, 'udp', '127.0.0.1'))[0]), 5, 'another class: REFUSED')
  t.same(await server.respond(packet.encode({ id: 6, type: 'response', questions: [] }), 'udp', '127.0.0.1'), [], 'a response is never answered')

  const failures: unknown[] = []
  const broken = new DnsServer({ zoneFor: async () => { throw new Error('store down') } }, { axfrAllow: [], onError: (error) => failures.push(error) })
  const question = packet.encode({ id: 7, type: 'query', questions: [{ name: 'www.example.com', type: 'A', class: 'IN' }] })
  t.equal(rcode((await broken.respond(question, 'udp', '127.0.0.1'))[0]), 2, 'a store that fails: SERVFAIL')
  t.match(failures, [{ message: 'store down' }], 'and the failure is reported')
})

t.test('response-rate limiting is on by default: a burst over UDP from one network meets truncated answers', async (t) => {
  const { port } = await served(t)
  const client = createSocket('udp4')
  t.teardown(() => client.close())
  const burst = 200
  let whole = 0
  let truncated = 0
  const settled = new Promise<void>((resolve) => {
    client.on('message', (message) => {
      if ((packet.decode(message).flags! & packet.TRUNCATED_RESPONSE) !== 0) truncated++
      else whole++
      // One truncated answer is the limit at work; all of them whole would mean there is none.
      if (truncated > 0 || whole === burst) resolve()
    })
  })
  for (let id = 1; id <= burst; id++) client.send(packet.encode({ id, type: 'query', questions: [{ name: 'www.example.com', type: 'A' }] }), port, '127.0.0.1')
  await settled
  t.ok(truncated > 0, `past the rate answers come back truncated (${whole} whole so far)`)
  t.ok(whole < burst)
  const tcp = await dig(port, 'www.example.com', 'A', '+tcp')
  t.same([tcp.status, tcp.answer.length], ['NOERROR', 2], 'TCP still answers')
})
