import t from 'tap'
import { OCTET_STREAM, SNIFF_BYTES, sniffType, typeAllowed } from '../../../services/files/sniff.js'

const hex = (text: string): Buffer => Buffer.from(text.replace(/\s/g, ''), 'hex')
const pad = (head: Buffer, to = 64): Buffer => Buffer.concat([head, Buffer.alloc(Math.max(0, to - head.length), 0x00)])

t.test('magic numbers', async (t) => {
  const cases: Array<[string, Buffer]> = [
    ['image/png', pad(hex('89504e470d0a1a0a 0000000d49484452'))],
    ['image/jpeg', pad(hex('ffd8ffe000104a464946'))],
    ['image/gif', pad(Buffer.from('GIF89a\x01\x00\x01\x00', 'latin1'))],
    ['image/gif', pad(Buffer.from('GIF87a', 'latin1'))],
    ['image/webp', pad(Buffer.from('RIFF\x24\x00\x00\x00WEBPVP8 ', 'latin1'))],
    ['audio/wav', pad(Buffer.from('RIFF\x24\x00\x00\x00WAVEfmt ', 'latin1'))],
    ['application/pdf', Buffer.from('%PDF-1.7\n%\xe2\xe3\xcf\xd3\n', 'latin1')],
    ['application/zip', pad(hex('504b0304140000000800'))],
    ['application/zip', pad(hex('504b0506'))],
    ['application/gzip', pad(hex('1f8b0800000000000003'))],
    ['video/mp4', pad(Buffer.from('\x00\x00\x00\x20ftypisom\x00\x00\x02\x00', 'latin1'))],
    ['audio/mp4', pad(Buffer.from('\x00\x00\x00\x20ftypM4A \x00\x00\x02\x00', 'latin1'))],
    ['video/webm', pad(Buffer.concat([hex('1a45dfa3 9f 4286 81 01 42f7 81 01 42f2 81 04 42f3 81 08 4282 84'), Buffer.from('webm')]))],
    ['video/x-matroska', pad(Buffer.concat([hex('1a45dfa3 a3 4282 88'), Buffer.from('matroska')]))],
    ['audio/mpeg', pad(Buffer.from('ID3\x04\x00\x00\x00\x00\x00\x00', 'latin1'))],
    ['audio/mpeg', pad(hex('fffb9064'))],
    ['audio/ogg', pad(Buffer.from('OggS\x00\x02', 'latin1'))]
  ]
  for (const [type, head] of cases) t.equal(sniffType(head), type, `${type} from ${head.subarray(0, 6).toString('hex')}`)
  t.equal(sniffType(pad(hex('fff1'))), OCTET_STREAM, 'an AAC sync word (layer 0) is not MP3')
  t.equal(sniffType(pad(hex('ffd8'))), OCTET_STREAM, 'two bytes of a JPEG marker are not enough')
  t.equal(sniffType(Buffer.from('RIFF\x10\x00\x00\x00AVI LIST', 'latin1')), OCTET_STREAM, 'an unknown RIFF form is not guessed')
})

t.test('text, markup and JSON', async (t) => {
  const cases: Array<[string, string, boolean?]> = [
    ['text/plain', 'hello world\nsecond line\r\n\ttabbed'],
    ['text/plain', 'naïve café — ünïcödé ✓'],
    ['text/plain', '\ufeffwith a BOM'],
    ['text/plain', '<!doctype html><html><script>alert(1)</script></html>'],
    ['text/plain', '<html><body>hi</body></html>'],
    ['image/svg+xml', '<svg xmlns="http://www.w3.org/2000/svg" width="1"/>'],
    ['image/svg+xml', '<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg"></svg>'],
    ['image/svg+xml', '  <!-- made by hand -->\n<svg viewBox="0 0 1 1"></svg>'],
    ['application/xml', '<?xml version="1.0"?><note><to>x</to></note>'],
    ['application/json', '{"a": [1, 2, {"b": null}]}'],
    ['application/json', '  [1, 2, 3]\n'],
    ['text/plain', '{not json at all}'],
    ['text/plain', '[link](http://example.com)']
  ]
  for (const [type, text] of cases) t.equal(sniffType(Buffer.from(text)), type, JSON.stringify(text.slice(0, 30)))

  const longJson = Buffer.from(`{"items": [${'1,'.repeat(SNIFF_BYTES)}1]}`).subarray(0, SNIFF_BYTES)
  t.equal(sniffType(longJson, { complete: false }), 'application/json', 'the start of a long JSON document')
  const cutUtf8 = Buffer.concat([Buffer.alloc(SNIFF_BYTES - 1, 'a'), Buffer.from('é').subarray(0, 1)])
  t.equal(sniffType(cutUtf8, { complete: false }), 'text/plain', 'a character cut at the end of the sample is forgiven')
  t.equal(sniffType(cutUtf8, { complete: true }), OCTET_STREAM, 'but not at the real end of the file')
})

t.test('binary and empty', async (t) => {
  t.equal(sniffType(Buffer.alloc(0)), OCTET_STREAM)
  t.equal(sniffType(hex('00010203040506070809')), OCTET_STREAM)
  t.equal(sniffType(Buffer.from('text with a \x00 NUL')), OCTET_STREAM)
  t.equal(sniffType(hex('c328a0a1')), OCTET_STREAM, 'invalid UTF-8')
  t.equal(sniffType(Buffer.from([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0])), OCTET_STREAM, 'an ELF executable')
})

t.test('typeAllowed', async (t) => {
  const cases: Array<[string, string[], boolean]> = [
    ['image/png', [], true],
    ['image/png', ['image/png'], true],
    ['image/png', ['IMAGE/PNG'], true],
    ['image/png', ['image/*'], true],
    ['image/png', ['*/*'], true],
    ['image/png', ['image/jpeg', 'application/pdf'], false],
    ['image/png', ['video/*'], false],
    ['image/svg+xml', ['image/*'], true],
    ['text/plain', ['text/plain; charset=utf-8'], true],
    ['application/octet-stream', ['image/*', 'application/pdf'], false],
    ['imagex/png', ['image/*'], false]
  ]
  for (const [type, allowed, expected] of cases) t.equal(typeAllowed(type, allowed), expected, `${type} in ${JSON.stringify(allowed)}`)
})
