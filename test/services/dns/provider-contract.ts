import type { Test } from 'tap'
import { ManualClock } from '../../../services/platform/clock.js'
import { AppError } from '../../../services/platform/errors.js'
import { createIdGenerator } from '../../../services/platform/ids.js'
import { DnsRecords } from '../../../services/dns/records.js'
import type { DnsProvider } from '../../../services/dns/providers/types.js'
import { Zones } from '../../../services/dns/zones.js'
import { tempStore } from '../../helper.js'
import { dig } from './dig.js'

export interface ContractTarget {
  provider: DnsProvider
  /** Where the provider's zones are served, when they are (the built-in server, PowerDNS): each answer is then checked with dig. */
  dnsPort?: number
  /** Whether the provider lists its SOA and apex NS (Cloudflare keeps them to itself). */
  listsSoa: boolean
  /** Whether its SOA serial moves with each change (Route 53 keeps 1: it serves no secondaries). */
  bumpsSerial: boolean
  zone: string
}

const line = (record: { name: string, ttl: number, type: string, content: string }) => `${record.name} ${record.ttl} ${record.type} ${record.content}`

/**
 * The one contract every provider meets, run through the zones and records
 * services so the rules are the same everywhere: connectivity, a zone created
 * with its SOA, every type written and read back in canonical form, a change
 * applied whole, a refused change changing nothing, the serial rising, and
 * the zone deleted. Where the zone is served, dig checks each answer over
 * UDP and over TCP.
 */
export async function providerContract (t: Test, target: ContractTarget): Promise<void> {
  const store = await tempStore(t)
  const clock = new ManualClock()
  const zones = new Zones(store, { clock, newId: createIdGenerator(() => clock.nowMs()), providers: { open: async () => ({ provider: target.provider, accountKey: 'contract' }) }, nameservers: ['ns1.plinth.test', 'ns2.plinth.test'] })
  await zones.init()
  const records = new DnsRecords(zones)
  const name = target.zone
  const port = target.dnsPort
  const both = async (question: string, type: string, expected: string[], status = 'NOERROR') => {
    if (port === undefined) return
    for (const via of ['+notcp', '+tcp']) {
      const answer = await dig(port, question, type, via)
      // Servers may echo the question's own case (0x20); names compare without it.
      const owners = answer.answer.map((entry) => entry.replace(/^\S+/, (owner) => owner.toLowerCase())).sort()
      t.same([answer.status, owners], [status, [...expected].sort()], `dig ${question} ${type} ${via}`)
      if (status === 'NXDOMAIN' || (expected.length === 0 && status === 'NOERROR')) t.match(answer.authority, [new RegExp(`^${name.replace(/\./g, '\\.')}\\. \\d+ IN SOA `)], `the SOA comes with a negative answer (${via})`)
    }
  }

  await target.provider.check()
  const zone = await zones.create('p1', { name, providerId: 'under-test' })
  const initial = (await records.list(zone)).filter((record) => record.type === 'SOA')
  const serialOf = async () => Number((await records.list(zone, { type: 'SOA' }))[0]?.content.split(' ')[2])
  if (target.listsSoa) t.equal(initial.length, 1, 'one SOA, at the apex')
  const firstSerial = target.listsSoa ? await serialOf() : 0

  const long = `v=DKIM1; p=${'A'.repeat(300)}`
  const written = await records.change(zone, {
    create: [
      { name: 'www', type: 'A', ttl: 300, content: '192.0.2.1' },
      { name: 'www', type: 'A', ttl: 300, content: '192.0.2.2' },
      { name: 'www', type: 'AAAA', ttl: 300, content: '2001:db8::1' },
      { name: 'alias', type: 'CNAME', ttl: 300, content: `www.${name}` },
      { name: '@', type: 'MX', ttl: 300, content: `10 mail.${name}` },
      { name: '@', type: 'TXT', ttl: 300, content: 'v=spf1 -all' },
      { name: 'dkim', type: 'TXT', ttl: 300, content: long },
      { name: '_sip._tcp', type: 'SRV', ttl: 300, content: `0 5 5060 sip.${name}` },
      { name: '@', type: 'CAA', ttl: 300, content: '0 issue "letsencrypt.org"' },
      { name: '*.apps', type: 'A', ttl: 300, content: '192.0.2.9' }
    ]
  })
  t.equal(written.written.length, 10)
  const expected = [
    `www.${name} 300 A 192.0.2.1`, `www.${name} 300 A 192.0.2.2`, `www.${name} 300 AAAA 2001:db8::1`, `alias.${name} 300 CNAME www.${name}`,
    `${name} 300 MX 10 mail.${name}`, `${name} 300 TXT v=spf1 -all`, `dkim.${name} 300 TXT ${long}`, `_sip._tcp.${name} 300 SRV 0 5 5060 sip.${name}`,
    `${name} 300 CAA 0 issue "letsencrypt.org"`, `*.apps.${name} 300 A 192.0.2.9`
  ]
  const listed = async () => (await records.list(zone)).filter((record) => record.type !== 'SOA' && !(record.type === 'NS' && record.name === name)).map(line).sort()
  t.same(await listed(), [...expected].sort(), 'every type reads back in canonical form')
  if (target.bumpsSerial) t.ok(await serialOf() > firstSerial, 'the serial rose')

  await both(`www.${name}`, 'A', [`www.${name}. 300 IN A 192.0.2.1`, `www.${name}. 300 IN A 192.0.2.2`])
  await both(`WWW.${name.toUpperCase()}`, 'AAAA', [`www.${name}. 300 IN AAAA 2001:db8::1`])
  await both(`alias.${name}`, 'A', [`alias.${name}. 300 IN CNAME www.${name}.`, `www.${name}. 300 IN A 192.0.2.1`, `www.${name}. 300 IN A 192.0.2.2`])
  await both(`dkim.${name}`, 'TXT', [`dkim.${name}. 300 IN TXT "v=DKIM1; p=${'A'.repeat(244)}" "${'A'.repeat(56)}"`])
  await both(name, 'MX', [`${name}. 300 IN MX 10 mail.${name}.`])
  await both(`_sip._tcp.${name}`, 'SRV', [`_sip._tcp.${name}. 300 IN SRV 0 5 5060 sip.${name}.`])
  await both(name, 'CAA', [`${name}. 300 IN CAA 0 issue "letsencrypt.org"`])
  await both(`x.apps.${name}`, 'A', [`x.apps.${name}. 300 IN A 192.0.2.9`])
  await both(`nope.${name}`, 'A', [], 'NXDOMAIN')
  await both(`www.${name}`, 'TXT', [])

  const before = await listed()
  const refused = await records.change(zone, { create: [{ name: 'ok', type: 'A', content: '192.0.2.3' }, { name: 'www', type: 'CNAME', content: 'example.net' }] }).catch((error: unknown) => error)
  t.ok(refused instanceof AppError && refused.code === 'APP_DNS_CNAME_CONFLICT', 'a CNAME beside other records is refused')
  t.same(await listed(), before, 'and nothing of that change reached the provider')

  const [first] = await records.list(zone, { name: `www.${name}`, type: 'A' })
  const serialBefore = target.listsSoa ? await serialOf() : 0
  const moved = await records.change(zone, { update: [{ id: first.id, name: 'www', type: 'A', ttl: 120, content: '192.0.2.7' }], delete: [(await records.list(zone, { name: `alias.${name}` }))[0].id] })
  t.equal(moved.written[0].content, '192.0.2.7')
  if (target.bumpsSerial) t.ok(await serialOf() > serialBefore, 'the serial rose again')
  t.same((await listed()).filter((entry) => entry.startsWith(`www.${name} `) || entry.startsWith(`alias.${name} `)), [`www.${name} 120 A 192.0.2.2`, `www.${name} 120 A 192.0.2.7`, `www.${name} 300 AAAA 2001:db8::1`].sort(), 'the update reset the set\'s TTL; the delete took the CNAME')
  await both(`www.${name}`, 'A', [`www.${name}. 120 IN A 192.0.2.2`, `www.${name}. 120 IN A 192.0.2.7`])
  await both(`alias.${name}`, 'A', [], 'NXDOMAIN')

  await zones.delete(zone)
  if (port !== undefined) t.equal((await dig(port, `www.${name}`, 'A')).status, 'REFUSED', 'a deleted zone is no longer served')
}
