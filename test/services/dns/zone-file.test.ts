import t from 'tap'
import { readFileSync } from 'node:fs'
import { AppError } from '../../../services/platform/errors.js'
import { parseZoneFile, renderZoneFile } from '../../../services/dns/zone-file.js'

// Written the way BIND's documentation and many hand-kept zones look.
const BIND_STYLE = readFileSync(new URL('../../fixtures/example.org.zone', import.meta.url), 'utf8')

t.test('a hand-written BIND-style file', async (t) => {
  const { origin, records } = parseZoneFile(BIND_STYLE)
  t.equal(origin, 'example.org')
  const lines = records.map((record) => `${record.name} ${record.ttl} ${record.type} ${record.content}`)
  t.same(lines, [
    'example.org 3600 SOA ns1.example.org hostmaster.example.org 2024010101 7200 3600 1209600 300',
    'example.org 3600 NS ns1.example.org',
    'example.org 3600 NS ns2.example.net',
    'example.org 3600 MX 10 mail.example.org',
    'example.org 3600 MX 20 mail.backup.example.net',
    'example.org 300 TXT v=spf1 mx -all',
    'example.org 3600 CAA 0 issue "letsencrypt.org"',
    'ns1.example.org 3600 A 192.0.2.53',
    'mail.example.org 3600 A 192.0.2.25',
    'mail.example.org 3600 AAAA 2001:db8::25',
    'www.example.org 1800 CNAME web.example.org',
    'web.example.org 600 A 192.0.2.80',
    '*.apps.example.org 3600 A 192.0.2.81',
    '_sip._tcp.example.org 3600 SRV 0 5 5060 sip.example.org',
    'dkim._domainkey.example.org 3600 TXT v=DKIM1; k=rsa; p=MIGfMA0GCSqGSIb3DQEBAQUAA4GNADCBiQKBgQC',
    'quoted.example.org 3600 TXT a "quoted" word; not a commentAB',
    'host.sub.example.org 3600 A 192.0.2.99'
  ])
})

t.test('render then parse gives the same records', async (t) => {
  const { records } = parseZoneFile(BIND_STYLE)
  const long = { name: 'long.example.org', type: 'TXT' as const, ttl: 60, content: `${'x'.repeat(300)} "é" \\ end` }
  const text = renderZoneFile('example.org', [...records, long])
  t.match(text, /^\$ORIGIN example\.org\.\n\$TTL 3600\n@\t3600\tIN\tSOA\t/)
  t.match(text, /\nlong\t60\tIN\tTXT\t"x{255}" "x{45} \\"\\195\\169\\" \\\\ end"\n/, 'long TXT cut at 255 bytes, escapes written')
  const again = parseZoneFile(text)
  t.same(again.records.sort(byText), [...records, long].sort(byText))
})

const byText = (a: { name: string, type: string, content: string }, b: { name: string, type: string, content: string }) => `${a.name} ${a.type} ${a.content}` < `${b.name} ${b.type} ${b.content}` ? -1 : 1

t.test('unquoted TXT words read their escapes', async (t) => {
  const { records } = parseZoneFile('$ORIGIN example.org.\n$TTL 60\nw TXT semi\\;colon\\032x\n')
  t.equal(records[0].content, 'semi;colon x')
})

t.test('refusals name the line', async (t) => {
  const cases: Array<[string, RegExp]> = [
    ['$ORIGIN example.org.\n$TTL 60\nwww A 300.1.1.1\n', /^Zone file line 3: Invalid A content/],
    ['$ORIGIN example.org.\n$INCLUDE /etc/passwd\n', /line 2: \$INCLUDE is not supported/],
    ['$ORIGIN example.org.\n$TTL 60\nwww IN PTR x\n', /line 3: type PTR is not supported/],
    ['$ORIGIN example.org.\n$TTL 60\nwww CH A 192.0.2.1\n', /line 3: only class IN/],
    ['$ORIGIN example.org.\nwww A 192.0.2.1\n', /line 2: no TTL/],
    ['www 60 A 192.0.2.1\n', /line 1: no \$ORIGIN/],
    ['$ORIGIN example.org.\n$TTL 60\nwww TXT "open\n', /line 3: a quoted string is not closed/],
    ['$ORIGIN example.org.\n$TTL 60\n@ SOA a b ( 1 2 3 4 5\n', /line 3: a "\(" is never closed/],
    ['$ORIGIN example.org.\n$TTL 10\nwww A 192.0.2.1\n', /line 3: TTL 10 is outside/],
    ['$ORIGIN example.org.\n$TTL 60\nwww TXT bad\\99\n', /line 3: a bad \\ escape/],
    ['$ORIGIN example.org.\n$TTL 60\nw\\046x A 192.0.2.1\n', /line 3: escapes in names are not supported/],
    ['; nothing\n', /no records/]
  ]
  for (const [text, message] of cases) {
    const error = (() => { try { parseZoneFile(text) } catch (caught) { return caught } })()
    t.ok(error instanceof AppError && error.code === 'APP_DNS_ZONE_FILE_INVALID' && error.status === 400, JSON.stringify(text))
    t.match((error as Error).message, message)
  }
})
