import type { Test } from 'tap'
import { randomBytes } from 'node:crypto'
import { ManualClock } from '../../../services/platform/clock.js'
import { Cursors } from '../../../services/collections/query.js'
import { LocalFileStore } from '../../../services/files/local-file-store.js'
import { UploadSessions } from '../../../services/files/uploads.js'
import { createIdGenerator } from '../../../services/platform/ids.js'
import { JobQueue } from '../../../services/jobs/queue.js'
import { SignedLinks } from '../../../services/platform/signed-links.js'
import type { Store } from '../../../services/store/types.js'
import { TRACKER_FOLLOW_UP_JOB, buildTrackerServices, type TrackerActor, type TrackerPorts, type TrackerScope } from '../../../services/tracker/index.js'
import type { FollowUpTask } from '../../../services/tracker/follow-ups.js'
import { tempDir, tempStore } from '../../helper.js'

export const PROJECT = 'proj1'
/** Monday 2 March 2026, 09:00 UTC. */
export const MONDAY = Date.UTC(2026, 2, 2, 9)
export const DAY = 86_400_000

const READ = ['project.read', 'tracker.read']
const WRITE = [...READ, 'tracker.write']
const ADMIN = [...WRITE, 'tracker.admin']

/** Callers as the platform's resolver would describe them in the platform project. */
export const people = {
  /** Runs the tracker: tracker.admin. */
  alice: { userId: 'alice', permissions: ADMIN },
  bob: { userId: 'bob', permissions: WRITE },
  carol: { userId: 'carol', permissions: WRITE },
  /** Added as a guest of the tracker projects she works in. */
  gina: { userId: 'gina', permissions: WRITE },
  /** Only reads. */
  rita: { userId: 'rita', permissions: READ },
  /** Not in the platform project at all. */
  oscar: { userId: 'oscar', permissions: [] as string[] }
} satisfies Record<string, TrackerActor>

/**
 * The tracker services on a temp store with a manual clock, as the plugin
 * will build them: a job queue for follow-ups, upload sessions on a local
 * file store, sealed cursors; `ports` adds or replaces some (item webhooks).
 */
export async function trackerOn (t: Test, wrap: (store: Store) => Store = (store) => store, ports: Partial<TrackerPorts> = {}) {
  const raw = await tempStore(t)
  const store = wrap(raw)
  const clock = new ManualClock(MONDAY)
  const newId = createIdGenerator(() => clock.nowMs())
  const queue = new JobQueue({ store: raw, newId })
  await queue.init()
  const uploads = new UploadSessions(raw, new LocalFileStore(tempDir(t, 'plinth-tracker-files-')), { clock, newId, chunkSize: 1024 })
  await uploads.init()
  const platformMembers = new Set(['alice', 'bob', 'carol', 'gina', 'rita'])
  const tracker = await buildTrackerServices({
    store,
    clock,
    newId,
    cursors: new Cursors(randomBytes(32)),
    uploads,
    jobs: queue,
    canUseTracker: async (_projectId, userId) => platformMembers.has(userId),
    exportFiles: new LocalFileStore(tempDir(t, 'plinth-tracker-exports-')),
    exportLinks: new SignedLinks(randomBytes(32)),
    exportPath: (projectId, exportId) => `/exports/${projectId}/${exportId}`,
    actorFor: async (_projectId, userId) => Object.values(people).find((person) => person.userId === userId) ?? { userId, permissions: [] },
    platformMembers: async () => [...platformMembers].map((userId) => ({ userId, name: null, email: null, admin: userId === 'alice' })),
    ...ports
  })
  const scope = async (actor: TrackerActor, lpId: string): Promise<TrackerScope> => await tracker.projects.scope(actor, PROJECT, lpId)
  /** The follow-ups queued so far, as their job would run them (a crash's repair). */
  const runFollowUps = async (): Promise<number> => {
    const jobs = await queue.jobs.find({ type: TRACKER_FOLLOW_UP_JOB }).toArray()
    for (const job of jobs) await tracker.followUps.run(job.payload as FollowUpTask)
    return jobs.length
  }
  /** A tracker project made by alice, with bob and carol as members and gina as a guest. */
  const project = async (identifier = 'WEB', extra: Record<string, unknown> = {}) => {
    const created = await tracker.projects.create(people.alice, PROJECT, { name: `${identifier} project`, identifier, ...extra })
    const admin = await scope(people.alice, created.id)
    await tracker.members.add(admin, { userId: 'bob', role: 'member' })
    await tracker.members.add(admin, { userId: 'carol', role: 'member' })
    await tracker.members.add(admin, { userId: 'gina', role: 'guest' })
    return { lpId: created.id, project: created, admin: await scope(people.alice, created.id), bob: await scope(people.bob, created.id), carol: await scope(people.carol, created.id), gina: await scope(people.gina, created.id) }
  }
  return { store: raw, clock, tracker, queue, uploads, scope, runFollowUps, project }
}

export type TrackerFixture = Awaited<ReturnType<typeof trackerOn>>
