import t from 'tap'
import { AppError } from '../../../services/platform/errors.js'
import { canonicalContent, type RecordType } from '../../../services/dns/content.js'
import { applyChanges, recordId, rrsetChanges, type RecordData } from '../../../services/dns/changes.js'
import { ownerName, zoneName } from '../../../services/dns/names.js'

function refusal (fn: () => unknown): [number, string] | null {
  try { fn() } catch (error) { return error instanceof AppError ? [error.status, error.code] : [0, String(error)] }
  return null
}

t.test('names: lower case, absolute, relative to the zone, inside it', async (t) => {
  t.equal(zoneName('Example.COM.'), 'example.com')
  const cases: Array<[string, string]> = [
    ['@', 'example.com'], ['WWW', 'www.example.com'], ['www.example.com', 'www.example.com'], ['www.Example.com.', 'www.example.com'],
    ['*.dev', '*.dev.example.com'], ['_acme-challenge', '_acme-challenge.example.com'], ['a.b', 'a.b.example.com'], ['example.com.', 'example.com']
  ]
  for (const [input, expected] of cases) t.equal(ownerName(input, 'example.com'), expected, input)
  const refused: Array<[string, number, string]> = [
    ['www.example.org.', 400, 'APP_DNS_NAME_OUTSIDE_ZONE'], ['ex ample', 400, 'APP_DNS_INVALID_NAME'], ['a..b', 400, 'APP_DNS_INVALID_NAME'],
    ['-a', 400, 'APP_DNS_INVALID_NAME'], ['a.*', 400, 'APP_DNS_INVALID_NAME'], [`${'a'.repeat(64)}`, 400, 'APP_DNS_INVALID_NAME'],
    [Array(70).fill('abc').join('.'), 400, 'APP_DNS_INVALID_NAME']
  ]
  for (const [input, status, code] of refused) t.same(refusal(() => ownerName(input, 'example.com')), [status, code], input)
  t.same(refusal(() => zoneName('com')), [400, 'APP_DNS_INVALID_NAME'], 'a zone needs two labels')
})

t.test('content: one canonical form per type, clear refusals', async (t) => {
  const good: Array<[RecordType, string, string]> = [
    ['A', ' 192.0.2.1 ', '192.0.2.1'],
    ['AAAA', '2001:DB8:0:0:0:0:0:1', '2001:db8::1'],
    ['CNAME', 'Target.Example.NET.', 'target.example.net'],
    ['NS', 'ns1.example.net', 'ns1.example.net'],
    ['MX', '10   Mail.Example.com.', '10 mail.example.com'],
    ['MX', '0 .', '0 .'],
    ['SRV', '10 5 5060 sip.example.com.', '10 5 5060 sip.example.com'],
    ['CAA', '0 ISSUE "letsencrypt.org"', '0 issue "letsencrypt.org"'],
    ['CAA', '128 iodef mailto:security@example.com', '128 iodef "mailto:security@example.com"'],
    ['TXT', 'v=spf1 -all', 'v=spf1 -all'],
    ['TXT', '"v=DKIM1; k=rsa; " "p=MIGf"', 'v=DKIM1; k=rsa; p=MIGf'],
    ['TXT', '"say \\"hi\\" \\226\\130\\172"', 'say "hi" €'],
    ['SOA', 'ns1.example.com. hostmaster.example.com. 1 7200 3600 1209600 300', 'ns1.example.com hostmaster.example.com 1 7200 3600 1209600 300']
  ]
  for (const [type, input, expected] of good) t.equal(canonicalContent(type, input), expected, `${type} ${input}`)
  const bad: Array<[RecordType, string]> = [
    ['A', '256.1.1.1'], ['A', '2001:db8::1'], ['A', '1.2.3'], ['AAAA', '192.0.2.1'], ['AAAA', 'fe80::1%eth0'], ['CNAME', 'a b'],
    ['MX', 'mail.example.com'], ['MX', '70000 mail.example.com'], ['SRV', '1 2 3'], ['SRV', '1 2 99999 x.example.com'],
    ['CAA', 'issue letsencrypt.org'], ['CAA', '300 issue "x"'], ['CAA', '0 issue two words'], ['TXT', '"unterminated'],
    ['TXT', 'x'.repeat(4001)], ['SOA', 'ns1 host 1 2 3']
  ]
  for (const [type, input] of bad) t.same(refusal(() => canonicalContent(type, input)), [400, 'APP_DNS_INVALID_CONTENT'], `${type} ${input.slice(0, 30)}`)
})

const soa: RecordData = { name: 'example.com', type: 'SOA', ttl: 3600, content: 'ns1.example.com hostmaster.example.com 1 7200 3600 1209600 300' }
const base: RecordData[] = [soa, { name: 'example.com', type: 'NS', ttl: 3600, content: 'ns1.example.com' }, { name: 'www.example.com', type: 'A', ttl: 300, content: '192.0.2.1' }]

t.test('changes: checked as a whole, all or nothing', async (t) => {
  const www = recordId('z1', base[2])
  const { records, rrsets, written } = applyChanges('z1', 'example.com', base, { create: [{ name: 'www', type: 'A', content: '192.0.2.2' }, { name: 'mail', type: 'MX', ttl: 600, content: '10 mx.example.net' }] })
  t.equal(records.length, 5)
  t.same(written.map((record) => record.ttl), [300, 600], 'a record without a TTL takes its set\'s')
  t.same(rrsets.map((set) => `${set.name} ${set.type} ${set.contents.join(',')}`).sort(), ['mail.example.com MX 10 mx.example.net', 'www.example.com A 192.0.2.1,192.0.2.2'])

  const ttl = applyChanges('z1', 'example.com', records, { create: [{ name: 'www', type: 'A', ttl: 60, content: '192.0.2.3' }] })
  t.same(ttl.records.filter((record) => record.name === 'www.example.com').map((record) => record.ttl), [60, 60, 60], 'a TTL given sets the whole set\'s')

  const refused: Array<[string, Parameters<typeof applyChanges>[3], number, string]> = [
    ['nothing', {}, 400, 'APP_DNS_EMPTY_CHANGE'],
    ['CNAME beside an A', { create: [{ name: 'www', type: 'CNAME', content: 'x.example.net' }] }, 409, 'APP_DNS_CNAME_CONFLICT'],
    ['CNAME at the apex', { create: [{ name: '@', type: 'CNAME', content: 'x.example.net' }] }, 409, 'APP_DNS_CNAME_CONFLICT'],
    ['two CNAMEs', { create: [{ name: 'a', type: 'CNAME', content: 'x.example.net' }, { name: 'a', type: 'CNAME', content: 'y.example.net' }] }, 409, 'APP_DNS_CNAME_CONFLICT'],
    ['duplicate', { create: [{ name: 'WWW.example.com.', type: 'A', content: '192.0.2.1' }] }, 409, 'APP_DNS_RECORD_EXISTS'],
    ['SOA create', { create: [{ name: '@', type: 'SOA', content: soa.content }] }, 400, 'APP_DNS_SOA_MANAGED'],
    ['SOA delete', { delete: [recordId('z1', soa)] }, 400, 'APP_DNS_SOA_MANAGED'],
    ['unknown id', { delete: ['z1-nope'] }, 404, 'APP_DNS_RECORD_NOT_FOUND'],
    ['TTL too low', { create: [{ name: 'x', type: 'A', ttl: 5, content: '192.0.2.9' }] }, 400, 'APP_DNS_INVALID_TTL'],
    ['outside', { create: [{ name: 'x.example.org.', type: 'A', content: '192.0.2.9' }] }, 400, 'APP_DNS_NAME_OUTSIDE_ZONE'],
    ['a good change beside a bad one', { create: [{ name: 'ok', type: 'A', content: '192.0.2.9' }, { name: 'bad', type: 'A', content: 'nope' }] }, 400, 'APP_DNS_INVALID_CONTENT']
  ]
  for (const [name, changes, status, code] of refused) t.same(refusal(() => applyChanges('z1', 'example.com', base, changes)), [status, code], name)

  const swapped = applyChanges('z1', 'example.com', base, { delete: [www], create: [{ name: 'www', type: 'CNAME', content: 'example.net' }] })
  t.same(swapped.records.filter((record) => record.name === 'www.example.com').map((record) => record.type), ['CNAME'], 'an A replaced by a CNAME in one change')
  t.same(rrsetChanges(base, swapped.records).map((set) => [set.type, set.contents.length]).sort(), [['A', 0], ['CNAME', 1]])
})
