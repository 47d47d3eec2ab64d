import type { Clock } from '../platform/clock.js'
import { addMonths, localDay, startOfDay } from './calendar.js'
import type { Idempotency } from './idempotency.js'
import type { TrackerProjects } from './projects.js'
import type { TrackerProjectRecord } from './records.js'
import type { TrackerStates } from './states.js'
import type { WorkItems } from './work-items.js'

/** The job type of the tracker's daily run (automations and housekeeping), one recurring job per deployment. */
export const TRACKER_DAILY_JOB = 'tracker.daily'
export const TRACKER_DAILY_EVERY_MS = 24 * 60 * 60_000

export interface AutomationRun { projects: number, closed: number, archived: number, keysForgotten: number }

/**
 * Auto-close and auto-archive. Each run selects only the items still due
 * (open and untouched since the cut-off; closed before it and not archived)
 * and changes each with one conditional write marked as an automation's, so
 * running twice in a day, or two nodes at once, changes each item once.
 */
export class TrackerAutomations {
  constructor (private readonly deps: { clock: Clock, projects: TrackerProjects, states: TrackerStates, workItems: WorkItems, idempotency: Idempotency }) {}

  async runDaily (): Promise<AutomationRun> {
    const run: AutomationRun = { projects: 0, closed: 0, archived: 0, keysForgotten: 0 }
    for (const project of await this.deps.projects.withAutomation()) {
      run.projects++
      run.closed += await this.autoClose(project)
      run.archived += await this.autoArchive(project)
    }
    run.keysForgotten = await this.deps.idempotency.purgeExpired()
    return run
  }

  /** The start of the day `months` months ago in the project's timezone: items untouched (or closed) before it are due. */
  private cutoff (project: TrackerProjectRecord, months: number): Date {
    return startOfDay(addMonths(localDay(this.deps.clock.now(), project.timezone), -months), project.timezone)
  }

  private async autoClose (project: TrackerProjectRecord): Promise<number> {
    const months = project.automation.autoCloseMonths
    if (months === 0) return 0
    const state = project.automation.autoCloseStateId === null
      ? await this.deps.states.firstOfGroup(project._id, 'cancelled')
      : await this.deps.states.find(project._id, project.automation.autoCloseStateId)
    if (state === null || state.group !== 'cancelled' || state.deletingTo !== null) return 0
    const cutoff = this.cutoff(project, months)
    return await this.deps.workItems.rewriteAll(project._id, {
      stateGroup: { $in: ['backlog', 'unstarted', 'started'] }, archivedAt: null, draft: false, updatedAt: { $lt: cutoff }
    }, (item) => item.stateGroup === 'completed' || item.stateGroup === 'cancelled' || item.updatedAt >= cutoff
      ? null
      : {
          set: { stateId: state._id, stateGroup: state.group, completedAt: null },
          entries: [{ field: 'state', from: item.stateId, to: state._id }, { field: 'stateGroup', from: item.stateGroup, to: state.group }]
        })
  }

  private async autoArchive (project: TrackerProjectRecord): Promise<number> {
    const months = project.automation.autoArchiveMonths
    if (months === 0) return 0
    const cutoff = this.cutoff(project, months)
    const now = this.deps.clock.now()
    return await this.deps.workItems.rewriteAll(project._id, {
      archivedAt: null,
      $or: [{ stateGroup: 'completed', completedAt: { $lt: cutoff } }, { stateGroup: 'cancelled', updatedAt: { $lt: cutoff } }]
    }, (item) => item.archivedAt !== null
      ? null
      : { set: { archivedAt: now }, entries: [{ field: 'archived', from: false, to: true }] })
  }
}
