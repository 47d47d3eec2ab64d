import t from 'tap'
import { sseFrames } from '../../sdk/core/sse.js'

/** A body that arrives in exactly these pieces, as a network may cut it. */
function body (...pieces: string[]): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder()
  return new ReadableStream({
    start (controller) {
      for (const piece of pieces) controller.enqueue(encoder.encode(piece))
      controller.close()
    }
  })
}

async function read (stream: ReadableStream<Uint8Array>) {
  const frames = []
  for await (const frame of sseFrames(stream)) frames.push(frame)
  return frames
}

t.test('the one server-sent events reader: ids, names, multi-line data, comments, CRLF, events cut anywhere', async (t) => {
  t.same(await read(body(
    ': keep-alive\n\n',
    'id: 1\nevent: run.started\ndata: {"a":1}\n\n',
    'id: 2\r\nevent: text.delta\r\ndata: {"text":"Hel', 'lo"}\r\n\r',
    '\ndata: line one\ndata:line two\n\n',
    'event: nothing\n\n',
    'id: 3\ndata: cut short'
  )), [
    { id: '1', event: 'run.started', data: '{"a":1}' },
    { id: '2', event: 'text.delta', data: '{"text":"Hello"}' },
    { event: 'message', data: 'line one\nline two' }
  ], 'a comment, an event without data and an unfinished one yield nothing')
  const multibyte = new TextEncoder().encode('data: ✓\n\n')
  const split = new ReadableStream<Uint8Array>({
    start (controller) { controller.enqueue(multibyte.slice(0, 7)); controller.enqueue(multibyte.slice(7)); controller.close() }
  })
  t.same(await read(split), [{ event: 'message', data: '✓' }], 'a character cut between two chunks')
  t.same(await read(body('data: one\r', '\ndata: two\r\n\r', '\n')), [{ event: 'message', data: 'one\ntwo' }], 'a CRLF cut between two chunks is one line end, not two')
  t.same(await read(body('data: one\r', 'data: two\r\r')), [{ event: 'message', data: 'one\ntwo' }], 'a lone CR still ends a line')
})
