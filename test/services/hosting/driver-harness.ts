import { request } from 'node:http'
import { setTimeout as sleep } from 'node:timers/promises'
import type { InstanceEvent, InstanceSpec, LogSink, LogStream } from '../../../services/hosting/runtime.js'

/** A LogSink that keeps every line, for assertions on what a driver wrote. */
export class RecordingSink implements LogSink {
  readonly lines: Array<{ line: string, stream: LogStream }> = []
  private readonly waiters: Array<{ match: RegExp, resolve: () => void }> = []

  write (line: string, stream: LogStream): void {
    this.lines.push({ line, stream })
    for (const waiter of [...this.waiters]) {
      if (waiter.match.test(line)) {
        this.waiters.splice(this.waiters.indexOf(waiter), 1)
        waiter.resolve()
      }
    }
  }

  text (stream?: LogStream): string {
    return this.lines.filter((entry) => stream === undefined || entry.stream === stream).map((entry) => entry.line).join('\n')
  }

  /** Resolves once a line matches (at once if one already did). */
  async seen (match: RegExp): Promise<void> {
    if (this.lines.some((entry) => match.test(entry.line))) return
    await new Promise<void>((resolve) => this.waiters.push({ match, resolve }))
  }
}

/** Keeps a driver's events and hands them out as they come. */
export class EventLog {
  readonly events: InstanceEvent[] = []
  private readonly waiters: Array<{ match: (event: InstanceEvent) => boolean, resolve: (event: InstanceEvent) => void }> = []

  readonly listener = (event: InstanceEvent): void => {
    this.events.push(event)
    for (const waiter of [...this.waiters]) {
      if (waiter.match(event)) {
        this.waiters.splice(this.waiters.indexOf(waiter), 1)
        waiter.resolve(event)
      }
    }
  }

  /** The next event of `type` for `instanceId` not yet taken. */
  async next<T extends InstanceEvent['type']> (type: T, instanceId: string): Promise<Extract<InstanceEvent, { type: T }>> {
    const match = (event: InstanceEvent): boolean => event.type === type && event.instanceId === instanceId
    const index = this.events.findIndex(match)
    if (index >= 0) return this.events.splice(index, 1)[0] as Extract<InstanceEvent, { type: T }>
    const event = await new Promise<InstanceEvent>((resolve) => this.waiters.push({ match, resolve }))
    this.events.splice(this.events.indexOf(event), 1)
    return event as Extract<InstanceEvent, { type: T }>
  }
}

/** A plain GET with no connection kept alive. */
export async function get (port: number, path: string, host = '127.0.0.1'): Promise<{ status: number, body: string }> {
  return await new Promise((resolve, reject) => {
    const call = request({ host, port, path, agent: false }, (response) => {
      let body = ''
      response.setEncoding('utf8')
      response.on('data', (chunk: string) => { body += chunk })
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body }))
    })
    call.on('error', reject)
    call.end()
  })
}

/** Polls until `check` holds; the bound only turns a hang into a failure. */
export async function eventually (check: () => Promise<boolean> | boolean, what: string, tries = 200): Promise<void> {
  for (let attempt = 0; attempt < tries; attempt++) {
    if (await check()) return
    await sleep(100)
  }
  throw new Error(`never happened: ${what}`)
}

export const SMALL_LIMITS: InstanceSpec['limits'] = { memoryMb: 128, cpus: 0.5, pids: 64 }

/** What a promise rejected with; a fulfilment fails the test. */
export async function rejection (promise: Promise<unknown>): Promise<unknown> {
  return await promise.then(() => { throw new Error('expected a rejection') }, (error: unknown) => error)
}
