import type { RecordInput } from '../services/dns/changes.js'

/** The zone both servers answer for in the DNS bench, and the mix of questions asked of it. */
export const BENCH_ZONE = 'bench.example'

export const BENCH_RECORDS: RecordInput[] = [
  { name: 'www', type: 'A', content: '192.0.2.1' },
  { name: 'www', type: 'A', content: '192.0.2.2' },
  { name: 'www', type: 'AAAA', content: '2001:db8::1' },
  { name: 'alias', type: 'CNAME', content: `www.${BENCH_ZONE}` },
  { name: '@', type: 'MX', content: `10 mail.${BENCH_ZONE}` },
  { name: 'mail', type: 'A', content: '192.0.2.25' },
  { name: '@', type: 'TXT', content: 'v=spf1 mx -all' },
  ...Array.from({ length: 200 }, (_, i) => ({ name: `host${i}`, type: 'A' as const, content: `198.51.100.${i % 250}` }))
]

// Answers, a CNAME chased, a referral-free NXDOMAIN and a NODATA, in the proportions a busy zone might see.
export const BENCH_QUESTIONS = [
  `www.${BENCH_ZONE} A`, `www.${BENCH_ZONE} AAAA`, `alias.${BENCH_ZONE} A`, `${BENCH_ZONE} MX`, `${BENCH_ZONE} TXT`,
  `host17.${BENCH_ZONE} A`, `host150.${BENCH_ZONE} A`, `nope.${BENCH_ZONE} A`, `mail.${BENCH_ZONE} AAAA`, `www.${BENCH_ZONE} A`
]
