import t, { type Test } from 'tap'
import { UpstreamReader } from '../../../services/hosting/gateway/upstream-reader.js'

/**
 * The gateway's reader of upstream answers, fed bytes as a connection would
 * deliver them: whole, and cut at every offset, so no framing depends on
 * where reads happen to end.
 */

const PROTOCOL = { code: 'UPSTREAM_PROTOCOL' }

interface Read { status: number, reason: string, headers: string[], whole: string | null, body: string, ended: boolean }

function reader (options: { head?: boolean, maxHead?: number, pauseBody?: boolean } = {}): { reader: UpstreamReader, read: Read } {
  const read: Read = { status: 0, reason: '', headers: [], whole: null, body: '', ended: false }
  const reader = new UpstreamReader({
    head: (status, reason, headers, whole) => {
      Object.assign(read, { status, reason, headers, whole: whole === null ? null : whole.toString('latin1') })
    },
    body: (chunk) => {
      read.body += chunk.toString('latin1')
      return options.pauseBody !== true
    },
    end: () => { read.ended = true }
  }, options.head ?? false, options.maxHead ?? 16384)
  return { reader, read }
}

/** The answer read from `bytes` in pieces of the given sizes (the rest in one), then the connection closed when `close`. */
function readIn (bytes: string, cuts: number[], options: { head?: boolean, close?: boolean } = {}): { reader: UpstreamReader, read: Read } {
  const made = reader(options)
  const buffer = Buffer.from(bytes, 'latin1')
  let offset = 0
  for (const size of [...cuts, buffer.length]) {
    if (offset >= buffer.length) break
    made.reader.push(buffer.subarray(offset, Math.min(buffer.length, offset + size)))
    offset += size
  }
  if (options.close === true) made.reader.close()
  return made
}

/** Every split of `bytes` in two, and one byte at a time: each must read as `expected`. */
function everySplit (t: Test, bytes: string, expected: { status: number, body: string, headers?: string[] }, options: { head?: boolean, close?: boolean } = {}): void {
  const splits = [...Array.from({ length: bytes.length }, (_, i) => [i + 1]), Array(bytes.length).fill(1)]
  for (const cuts of splits) {
    const { reader, read } = readIn(bytes, cuts, options)
    const body = read.whole ?? read.body
    if (read.status !== expected.status || body !== expected.body || !reader.done || (read.whole === null && !read.ended)) {
      t.fail(`cut at ${cuts.join(',')}: ${JSON.stringify(read)}`)
      return
    }
    if (expected.headers !== undefined) t.same(read.headers, expected.headers)
  }
  t.pass(`${JSON.stringify(bytes.slice(0, 40))}… reads the same however it is cut`)
}

t.test('Content-Length: whole in one read, or streamed when it is not', async (t) => {
  const bytes = 'HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 11\r\n\r\nhello world'
  const whole = readIn(bytes, [])
  t.same(whole.read, { status: 200, reason: 'OK', headers: ['Content-Type', 'text/plain', 'Content-Length', '11'], whole: 'hello world', body: '', ended: false })
  t.equal(whole.reader.framing, 'length')
  t.ok(whole.reader.reusable)
  const streamed = readIn(bytes, [bytes.length - 3])
  t.same([streamed.read.whole, streamed.read.body, streamed.read.ended], [null, 'hello world', true])
  everySplit(t, bytes, { status: 200, body: 'hello world' })
  t.same(readIn('HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n', []).read.whole, '', 'an empty body')
})

t.test('chunked: extensions, trailers, and a length when read whole', async (t) => {
  const bytes = 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;name=value\r\nhello\r\n1\r\n \r\nA\r\nchunked!!!\r\n0\r\nX-Checksum: 1\r\n\r\n'
  const whole = readIn(bytes, [])
  t.equal(whole.read.whole, 'hello chunked!!!')
  t.same(whole.read.headers, ['Transfer-Encoding', 'chunked', 'Content-Length', '16'], 'a chunked answer read whole gains its length')
  t.equal(whole.reader.framing, 'chunked')
  const streamed = readIn(bytes, [50])
  t.same([streamed.read.whole, streamed.read.body, streamed.read.ended], [null, 'hello chunked!!!', true])
  t.same(streamed.read.headers, ['Transfer-Encoding', 'chunked'], 'streamed, it keeps no length')
  everySplit(t, bytes, { status: 200, body: 'hello chunked!!!' })
  t.equal(readIn('HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\n\r\n0\r\n\r\n', []).read.whole, '', 'the coding name is case-insensitive')
})

t.test('no length: the body runs until the upstream closes, and the connection is not reused', async (t) => {
  const bytes = 'HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil the end'
  const { reader: r, read } = readIn(bytes, [20])
  t.same([read.whole, read.body, read.ended, r.done], [null, 'until the end', false, false])
  t.equal(r.framing, 'close')
  t.notOk(r.reusable)
  r.close()
  t.ok(read.ended && r.done)
  everySplit(t, bytes, { status: 200, body: 'until the end' }, { close: true })
  const empty = readIn('HTTP/1.1 200 OK\r\n\r\n', [], { close: true })
  t.same([empty.read.whole, empty.read.body, empty.read.ended], [null, '', true], 'an empty body until close')
})

t.test('HEAD, 204 and 304 have no body whatever their headers say', async (t) => {
  const head = readIn('HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n', [], { head: true })
  t.same([head.read.whole, head.reader.done, head.reader.reusable], ['', true, false], 'done, but a body it named may still come: not reused')
  t.ok(readIn('HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n', [], { head: true }).reader.reusable, 'no body named: reused')
  t.ok(readIn('HTTP/1.1 304 Not Modified\r\nETag: "x"\r\n\r\n', []).reader.reusable)
  t.notOk(readIn('HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n', []).reader.reusable)
  const chunkedHead = readIn('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n', [], { head: true })
  t.same(chunkedHead.read.headers, ['Transfer-Encoding', 'chunked'], 'no length is invented for an answer to HEAD')
  t.equal(readIn('HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n', []).read.whole, '')
  const chunked304 = readIn('HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\n', [])
  t.same([chunked304.read.whole, chunked304.reader.reusable], ['', false])
})

t.test('informational answers are skipped; the final one is read', async (t) => {
  const bytes = 'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok'
  everySplit(t, bytes, { status: 201, body: 'ok', headers: ['Content-Length', '2'] })
})

t.test('status lines, reasons and connection hints', async (t) => {
  t.same(readIn('HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n', []).read.reason, '', 'no reason phrase')
  t.equal(readIn('HTTP/1.1 418 Short And Stout\r\nContent-Length: 0\r\n\r\n', []).read.reason, 'Short And Stout')
  t.notOk(readIn('HTTP/1.1 200 OK\r\nConnection: keep-alive, close\r\nContent-Length: 0\r\n\r\n', []).reader.reusable, 'Connection: close')
  t.notOk(readIn('HTTP/1.1 200 OK\r\nConnection: keep-alive\r\nConnection: close\r\nContent-Length: 0\r\n\r\n', []).reader.reusable, 'Connection: close in a second header')
  t.notOk(readIn('HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n', []).reader.reusable, 'HTTP/1.0')
  t.equal(readIn('HTTP/1.1 200 OK\r\nKeep-Alive: timeout=5, max=100\r\nContent-Length: 0\r\n\r\n', []).reader.keepAliveMs, 5000)
  t.equal(readIn('HTTP/1.1 200 OK\r\nKeep-Alive: max=100\r\nContent-Length: 0\r\n\r\n', []).reader.keepAliveMs, null)
  t.same(readIn('HTTP/1.1 200 OK\r\nX-Spaced: \t padded \t\r\nContent-Length: 0\r\n\r\n', []).read.headers.slice(0, 2), ['X-Spaced', 'padded'], 'optional whitespace around a value goes')
  const extra = readIn('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\n', [])
  t.same([extra.read.whole, extra.reader.reusable], ['ok', false], 'bytes past the answer: read, but the connection is not reused')
})

t.test('anything unexpected is refused', async (t) => {
  const refused: Record<string, string> = {
    'a status line of another protocol': 'HTTP/2 200 OK\r\n\r\n',
    'a status under 100': 'HTTP/1.1 099 Low\r\n\r\n',
    'a bare LF': 'HTTP/1.1 200 OK\nContent-Length: 0\r\n\r\n',
    'a header without a name': 'HTTP/1.1 200 OK\r\n: x\r\n\r\n',
    'a header without a colon': 'HTTP/1.1 200 OK\r\nNoColon\r\n\r\n',
    'space before the colon': 'HTTP/1.1 200 OK\r\nContent-Length : 0\r\n\r\n',
    'an obsolete line fold': 'HTTP/1.1 200 OK\r\nX-A: 1\r\n folded\r\nContent-Length: 0\r\n\r\n',
    'a control character in a value': 'HTTP/1.1 200 OK\r\nX-A: a\x01b\r\nContent-Length: 0\r\n\r\n',
    'two Content-Lengths': 'HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx',
    'a Content-Length that is no number': 'HTTP/1.1 200 OK\r\nContent-Length: 1x\r\n\r\nx',
    'a negative Content-Length': 'HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n',
    'a coding other than chunked': 'HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n',
    'two Transfer-Encodings': 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
    'both framings': 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n',
    'a 101 nobody asked for': 'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n',
    'a chunk size that is not hex': 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhi\r\n0\r\n\r\n',
    'a chunk size too large': 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1000000000000\r\n',
    'a chunk without its CRLF': 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhiX\r\n0\r\n\r\n',
    'a chunk ended by LF alone': 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\n0\r\n\r\n',
    'a malformed trailer': 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nno colon\r\n\r\n'
  }
  for (const [what, bytes] of Object.entries(refused)) {
    t.throws(() => readIn(bytes, []), PROTOCOL, what)
  }
  t.throws(() => readIn(`HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;${'x'.repeat(2000)}\r\n`, [1000]), PROTOCOL, 'an oversized chunk line')
})

t.test('a head past the size limit is refused, whether or not its end has come', async (t) => {
  const big = `HTTP/1.1 200 OK\r\nX-Big: ${'x'.repeat(300)}\r\nContent-Length: 0\r\n\r\n`
  t.throws(() => reader({ maxHead: 256 }).reader.push(Buffer.from(big)), PROTOCOL, 'ended within the read')
  const partial = reader({ maxHead: 256 }).reader
  t.equal(partial.push(Buffer.from(big.slice(0, 200))), false)
  t.throws(() => partial.push(Buffer.from(big.slice(200, 290))), PROTOCOL, 'still unended past the limit')
  const trailers = reader({ maxHead: 256 }).reader
  t.throws(() => trailers.push(Buffer.from(`HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-T: ${'y'.repeat(100)}\r\nX-U: ${'y'.repeat(100)}\r\nX-V: ${'y'.repeat(100)}\r\n\r\n`)), PROTOCOL, 'trailers count toward the limit')
})

t.test('an answer cut short by the upstream closing is refused', async (t) => {
  const cuts = [
    'HTTP/1.1 200 OK\r\nContent-Le',
    'HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhalf',
    'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel',
    'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n'
  ]
  for (const bytes of cuts) {
    const { reader: r } = readIn(bytes, [10])
    t.ok(r.received)
    t.throws(() => r.close(), PROTOCOL, JSON.stringify(bytes))
  }
  const silent = reader().reader
  t.notOk(silent.received, 'nothing received')
  t.throws(() => silent.close(), PROTOCOL)
  const done = readIn('HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n', [])
  t.doesNotThrow(() => done.reader.close(), 'closing after a complete answer is no error')
})

t.test('the sink asking to pause is passed back to the connection', async (t) => {
  const { reader: r, read } = reader({ pauseBody: true })
  t.equal(r.push(Buffer.from('HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nab')), true, 'the body held with the head asked to pause')
  t.equal(r.push(Buffer.from('cd')), true)
  t.equal(r.push(Buffer.from('ef')), true)
  t.same([read.body, read.ended], ['abcdef', true])
})
