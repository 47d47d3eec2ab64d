import type { ServerResponse } from 'node:http'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { AssistantRuns } from '../../services/assistant/runs.js'

const HEARTBEAT_MS = 15_000

export function wantsEventStream (request: FastifyRequest): boolean {
  return (request.headers.accept ?? '').includes('text/event-stream')
}

/**
 * Writes to an event stream that leave at once. Node corks a chunked
 * response's socket at each write until the next tick, and that tick comes
 * only after every microtask queued behind the write (a run's next events and
 * their store writes): corked and uncorked here, the event goes out on the
 * write, its chunk framing still in one packet.
 */
export function eventSender (raw: ServerResponse): (text: string) => void {
  return (text) => {
    raw.cork()
    raw.write(text)
    raw.uncork()
  }
}

/**
 * A run's events after `after` as server-sent events (`id`, `event`, `data`),
 * until the run ends or waits for an approval; the client leaving stops the
 * stream, not the run.
 */
export async function streamEvents (
  request: FastifyRequest, reply: FastifyReply, runs: AssistantRuns, runId: string, after: number
): Promise<FastifyReply> {
  reply.hijack()
  reply.raw.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-accel-buffering': 'no'
  })
  const send = eventSender(reply.raw)
  const gone = new AbortController()
  const heartbeat = setInterval(() => { send(': keep-alive\n\n') }, HEARTBEAT_MS).unref()
  const leave = (): void => { gone.abort() }
  request.raw.once('close', leave)
  reply.raw.once('close', leave)
  try {
    for await (const event of runs.follow(runId, after, gone.signal)) {
      send(`id: ${event.id}\nevent: ${event.type}\ndata: ${JSON.stringify({ ...event, runId })}\n\n`)
    }
  } catch (error) {
    request.log.error({ err: error, runId }, 'following an assistant run failed')
    send(`event: error\ndata: ${JSON.stringify({ message: 'The run\'s events could not be read' })}\n\n`)
  } finally {
    clearInterval(heartbeat)
    request.raw.off('close', leave)
    reply.raw.off('close', leave)
    reply.raw.end()
  }
  return reply
}
