import { startScriptedProvider } from '../test/fixtures/scripted-provider.js'
import { cpuMs, ONLY, start } from './pairs.js'

/**
 * The assistant's streaming rows (issue 32), through the scripted provider on
 * loopback speaking OpenAI's chat completions: the time from the provider's
 * first byte to the client's first `text.delta` event through the server (one
 * run at a time; p50 and p99 of RUNS runs), and CONCURRENT runs streamed at
 * once, each checked for every event (ids 1…n without a gap, the text whole,
 * `run.completed` last). Each is set beside a hello-world request's round
 * trip measured in the same run, one at a time, as a ratio; the first row
 * also gives the server's CPU time per run (whole runs: session, message,
 * model call, events), which a shared machine's load moves far less.
 *
 * The clock starts as the provider writes its answer's first bytes (the
 * status line, headers and first chunk go in one write) and stops when the
 * client has parsed the first `text.delta`: the provider's connection, its
 * address check and the request before it are not in the window, as the bar
 * says; the client's own parsing is.
 */
const RUNS = Number(process.env.BENCH_ASSISTANT_RUNS ?? 50)
const CONCURRENT = Number(process.env.BENCH_ASSISTANT_CONCURRENT ?? 100)
const TEXT = 'The deploy finished and every check passed. Nothing else needs doing today. '

const streamStarts: number[] = []
const provider = await startScriptedProvider([], { onStreamStart: () => { streamStarts.push(performance.now()) } })
const hello = await start('./hello.ts')
const server = await start('./assistant-serve.ts', { BENCH_PROVIDER_URL: provider.url })
const auth = { authorization: `Bearer ${server.info.accessToken}` }
const sessions = `${server.address}/api/projects/${server.info.projectId}/assistant/sessions`

const percentile = (values: number[], p: number): number => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * p))]

interface Streamed { ids: number[], types: string[], text: string, firstDeltaAt: number | null }

/** One message posted with `Accept: text/event-stream` in a new session, its stream read to the end. */
async function streamRun (): Promise<Streamed> {
  const session = await (await fetch(sessions, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: '{}' })).json() as { data: { id: string } }
  const res = await fetch(`${sessions}/${session.data.id}/messages`, { method: 'POST', headers: { ...auth, accept: 'text/event-stream', 'content-type': 'application/json' }, body: JSON.stringify({ content: 'Status?' }) })
  if (res.headers.get('content-type')?.startsWith('text/event-stream') !== true) throw new Error(`not a stream: ${res.status} ${await res.text()}`)
  const out: Streamed = { ids: [], types: [], text: '', firstDeltaAt: null }
  const decoder = new TextDecoder()
  let buffer = ''
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true })
    let end: number
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, end)
      buffer = buffer.slice(end + 2)
      const fields = Object.fromEntries(block.split('\n').filter((line) => line.includes(': ') && !line.startsWith(':')).map((line) => [line.slice(0, line.indexOf(': ')), line.slice(line.indexOf(': ') + 2)]))
      if (fields.event === undefined) continue
      if (fields.event === 'text.delta' && out.firstDeltaAt === null) out.firstDeltaAt = performance.now()
      out.ids.push(Number(fields.id))
      out.types.push(fields.event)
      if (fields.event === 'text.delta') out.text += (JSON.parse(fields.data) as { data: { text: string } }).data.text
    }
  }
  return out
}

/** Every event there: ids 1…n in order, the whole text, the run completed. */
const whole = (run: Streamed): boolean => run.ids.every((id, index) => id === index + 1) && run.text === TEXT && run.types.at(-1) === 'run.completed'

async function helloRoundTrip (): Promise<number> {
  const samples: number[] = []
  for (let i = 0; i < 200; i++) {
    const started = performance.now()
    await (await fetch(`${hello.address}/`)).arrayBuffer()
    samples.push(performance.now() - started)
  }
  return percentile(samples, 0.5)
}

try {
  // Warm-up: the first runs compile schemas and open the provider's connection pool.
  provider.push(...Array.from({ length: 5 }, () => ({ text: TEXT })))
  for (let i = 0; i < 5; i++) await streamRun()
  const helloBefore = await helloRoundTrip()

  if (ONLY.test('assistant streaming first event')) {
    const overheads: number[] = []
    const cpuBefore = cpuMs(server.child.pid)
    for (let i = 0; i < RUNS; i++) {
      provider.push({ text: TEXT })
      const before = streamStarts.length
      const run = await streamRun()
      if (!whole(run) || run.firstDeltaAt === null || streamStarts.length !== before + 1) throw new Error(`run ${i} lost events: ${run.types.join(',')}`)
      overheads.push(run.firstDeltaAt - streamStarts[before])
    }
    const cpuPerRun = (cpuMs(server.child.pid) - cpuBefore) / RUNS
    const p50 = percentile(overheads, 0.5)
    const p99 = percentile(overheads, 0.99)
    console.log(`${'assistant streaming first event'.padEnd(34)} p50 ${p50.toFixed(2)} ms, p99 ${p99.toFixed(2)} ms over ${RUNS} runs, provider's first byte → client's first event; ` +
      `server CPU ${cpuPerRun.toFixed(1)} ms per run; ` +
      `${(p50 / helloBefore).toFixed(1)}× a hello-world round trip (p50 ${helloBefore.toFixed(2)} ms, same run)  [bar: p50 < 5 ms: ${p50 < 5 ? 'met' : 'MISSED'}]`)
  }

  if (ONLY.test('assistant streaming concurrent')) {
    provider.push(...Array.from({ length: CONCURRENT }, () => ({ text: TEXT })))
    const started = performance.now()
    const runs = await Promise.all(Array.from({ length: CONCURRENT }, streamRun))
    const seconds = (performance.now() - started) / 1000
    const lost = runs.filter((run) => !whole(run)).length
    const events = runs.reduce((sum, run) => sum + run.ids.length, 0)
    const helloAfter = await helloRoundTrip()
    console.log(`${`assistant streaming concurrent ${CONCURRENT}`.padEnd(34)} ${CONCURRENT} runs at once, ${events} events in ${seconds.toFixed(2)} s, ${lost} run(s) with a lost or reordered event; ` +
      `${(seconds * 1000 / CONCURRENT / helloAfter).toFixed(1)}× a hello-world round trip per run (p50 ${helloAfter.toFixed(2)} ms, same run)  [bar: none lost: ${lost === 0 ? 'met' : 'MISSED'}]`)
  }
} finally {
  server.child.kill('SIGTERM')
  hello.child.kill('SIGTERM')
  await provider.close()
}
