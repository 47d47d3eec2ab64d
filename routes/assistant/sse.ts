import type { FastifyReply, FastifyRequest } from 'fastify'
import type { AssistantRuns } from '../../services/assistant/runs.js'

const HEARTBEAT_MS = 15_000

export function wantsEventStream (request: FastifyRequest): boolean {
  return (request.headers.accept ?? '').includes('text/event-stream')
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
  const gone = new AbortController()
  const heartbeat = setInterval(() => { reply.raw.write(': keep-alive\n\n') }, HEARTBEAT_MS).unref()
  const leave = (): void => { gone.abort() }
  request.raw.once('close', leave)
  reply.raw.once('close', leave)
  try {
    for await (const event of runs.follow(runId, after, gone.signal)) {
      reply.raw.write(`id: ${event.id}\nevent: ${event.type}\ndata: ${JSON.stringify({ ...event, runId })}\n\n`)
    }
  } catch (error) {
    request.log.error({ err: error, runId }, 'following an assistant run failed')
    reply.raw.write(`event: error\ndata: ${JSON.stringify({ message: 'The run\'s events could not be read' })}\n\n`)
  } finally {
    clearInterval(heartbeat)
    request.raw.off('close', leave)
    reply.raw.off('close', leave)
    reply.raw.end()
  }
  return reply
}
