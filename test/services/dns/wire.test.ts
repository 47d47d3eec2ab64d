import t from 'tap'
import * as packet from 'dns-packet'
import type { Answer, Packet } from 'dns-packet'
import { encodeRecord, encodeResponse } from '../../../services/dns/wire.js'

const records: Answer[] = [
  { name: 'www.wire.example', type: 'A', class: 'IN', ttl: 300, data: '192.0.2.1' },
  { name: 'WWW.Wire.example', type: 'AAAA', class: 'IN', ttl: 60, data: '2001:db8::1' },
  { name: 'wire.example', type: 'MX', class: 'IN', ttl: 300, data: { preference: 10, exchange: 'mail.wire.example' } },
  { name: 'wire.example', type: 'TXT', class: 'IN', ttl: 300, data: [Buffer.from('v=spf1 -all'), Buffer.alloc(255, 'x')] },
  { name: 'wire.example', type: 'SOA', class: 'IN', ttl: 300, data: { mname: 'ns1.wire.example', rname: 'hostmaster.wire.example', serial: 2026112601, refresh: 7200, retry: 3600, expire: 1209600, minimum: 300 } },
  { name: '.', type: 'OPT', udpPayloadSize: 1232, flags: 0, options: [] } as unknown as Answer
]

t.test('a response assembled from records encoded apart is byte for byte what dns-packet writes', async (t) => {
  const message: Packet = { id: 4242, type: 'response', flags: 0x0500, questions: [{ name: 'Www.wire.example', type: 'A', class: 'IN' }], answers: records.slice(0, 2), authorities: [records[4]], additionals: records.slice(2, 6) }
  const expected = packet.encode(message)
  const response = { id: 4242, flags: 0x0500, questions: message.questions ?? [], answers: records.slice(0, 2), authorities: [records[4]], additionals: records.slice(2, 6) }
  const known = new Map(records.slice(0, 3).map((record) => [record, encodeRecord(record)]))
  t.same(encodeResponse(response, (record) => known.get(record)), expected, 'some records known, the others encoded on the way')
  t.same(encodeResponse(response, () => undefined), expected, 'none known')
  t.same(encodeResponse(response, () => undefined, expected.length), expected, 'exactly at the limit')
  t.equal(encodeResponse(response, () => undefined, expected.length - 1), null, 'one byte over: nothing written')
  t.same(packet.decode(expected).answers?.[1].name, 'WWW.Wire.example', 'owner names keep their case')
})
