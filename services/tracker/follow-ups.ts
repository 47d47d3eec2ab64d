import type { JobPayload } from '../jobs/job.js'

/**
 * Writes that span documents (a state deleted with its items moved, a cycle
 * transfer, a comment and its activity, a project purge) record their intent
 * first as a delayed job on the durable queue, then run at once. Every step
 * is idempotent, so the job, when it comes, finds nothing left to do; if the
 * process died half-way, the job finishes what was started.
 */

export const TRACKER_FOLLOW_UP_JOB = 'tracker.follow-up'
/** Long enough for the inline run to have finished, short enough that a crash is repaired soon. */
export const FOLLOW_UP_DELAY_MS = 10 * 60_000

export type FollowUpTask = JobPayload & { kind: string }
type Handler = (task: FollowUpTask) => Promise<unknown>

/** The slice of the job queue follow-ups need. */
export interface FollowUpQueue {
  enqueue: (type: string, payload: JobPayload, options: { delayMs: number }) => Promise<unknown>
}

export class FollowUps {
  private readonly handlers = new Map<string, Handler>()

  constructor (private readonly queue: FollowUpQueue) {}

  /** Each service names the kinds it finishes. */
  on (kind: string, handler: Handler): void {
    if (this.handlers.has(kind)) throw new Error(`follow-up ${kind} registered twice`)
    this.handlers.set(kind, handler)
  }

  /** Records the task on the queue, makes the write it follows (`first`, if any), then runs the task now; what the task answered. */
  async guard (task: FollowUpTask, first?: () => Promise<void>): Promise<unknown> {
    await this.queue.enqueue(TRACKER_FOLLOW_UP_JOB, task, { delayMs: FOLLOW_UP_DELAY_MS })
    if (first !== undefined) await first()
    return await this.run(task)
  }

  /** The job handler: runs a task again (it is idempotent). */
  async run (task: FollowUpTask): Promise<unknown> {
    const handler = this.handlers.get(task.kind)
    if (handler === undefined) throw new Error(`no follow-up handler for ${String(task.kind)}`)
    return await handler(task)
  }
}
