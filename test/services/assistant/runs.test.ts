import t, { type Test } from 'tap'
import { randomBytes } from 'node:crypto'
import type { RunEventT } from '../../../schemas/assistant.js'
import { AssistantRuns, type RunRecord } from '../../../services/assistant/runs.js'
import { Cursors } from '../../../services/collections/query.js'
import { ManualClock } from '../../../services/platform/clock.js'
import { tempStore } from '../../helper.js'

async function setup (t: Test, pollMs = 10) {
  const clock = new ManualClock()
  const store = await tempStore(t)
  const runs = new AssistantRuns(store, { clock, cursors: new Cursors(randomBytes(32)), pollMs })
  await runs.init()
  const now = clock.now()
  const run: RunRecord = {
    _id: 'run-1',
    sessionId: 'session-1',
    projectId: 'project-1',
    organizationId: 'org-1',
    status: 'running',
    model: 'scripted:model-1',
    stopReason: null,
    error: null,
    usage: { inputTokens: 0, outputTokens: 0, steps: 0 },
    approvals: [],
    createdBy: 'user-1',
    scopes: null,
    eventCount: 0,
    createdAt: now,
    updatedAt: now,
    finishedAt: null
  }
  await runs.insert(run)
  await runs.emit(run._id, 'run.started', { runId: run._id })
  // Resolves once a follower has read the run's status (it does so when it finds no new event).
  let statusRead = (): void => {}
  const byId = runs.byId.bind(runs)
  runs.byId = async (runId) => {
    const found = await byId(runId)
    statusRead()
    return found
  }
  const nextStatusRead = async (): Promise<void> => { await new Promise<void>((resolve) => { statusRead = resolve }) }
  const follow = async (after: number): Promise<RunEventT[]> => {
    const seen: RunEventT[] = []
    for await (const event of runs.follow(run._id, after, new AbortController().signal)) seen.push(event)
    return seen
  }
  return { clock, store, runs, run, nextStatusRead, follow }
}

const EVENTS = 'assistant_run_events'
const RUNS = 'assistant_runs'

const brief = (events: RunEventT[]): Array<[number, string]> => events.map((event) => [event.id, event.type])

t.test('a follower that reads a run\'s end before the event announcing it is written waits for that event', async (t) => {
  const { runs, run, nextStatusRead, follow } = await setup(t)
  const ended = await runs.transition(run._id, ['running'], 'completed', { stopReason: 'end_turn' })
  t.equal(ended?.eventCount, 2, 'the move took the id of its event')
  const read = nextStatusRead()
  const following = follow(1)
  await read
  await runs.announce(ended as RunRecord, 'run.completed', { stopReason: 'end_turn' })
  t.same(brief(await following), [[2, 'run.completed']])
  t.same(brief(await follow(2)), [], 'a follower after the last event ends at once')
})

t.test('a pause for approval is announced the same way, and the run goes on after it without a gap in the ids', async (t) => {
  const { runs, run, nextStatusRead, follow } = await setup(t)
  const parked = await runs.transition(run._id, ['running'], 'awaiting_approval')
  const read = nextStatusRead()
  const paused = follow(1)
  await read
  await runs.announce(parked as RunRecord, 'approval.required', { approvals: [] })
  t.same(brief(await paused), [[2, 'approval.required']])
  t.equal((await runs.transition(run._id, ['awaiting_approval'], 'queued'))?.eventCount, 2, 'going back on the queue takes no id')
  t.equal((await runs.transition(run._id, ['queued'], 'running'))?.eventCount, 2, 'nor does starting again')
  await runs.emit(run._id, 'step.finished', {})
  const cancelled = await runs.transition(run._id, ['running'], 'cancelled')
  await runs.announce(cancelled as RunRecord, 'run.cancelled', {})
  t.same(brief(await follow(2)), [[3, 'step.finished'], [4, 'run.cancelled']])
})

t.test('an answer that does not stream, read once the run has ended, has the event announcing the end even when it is written after the read began', async (t) => {
  const { clock, runs, run, nextStatusRead } = await setup(t)
  const ended = await runs.transition(run._id, ['running'], 'completed', { stopReason: 'end_turn' }) as RunRecord
  const read = nextStatusRead()
  const answer = runs.eventsSoFar(ended, 0)
  await read
  await runs.announce(ended, 'run.completed', { stopReason: 'end_turn' })
  t.same(brief(await answer), [[1, 'run.started'], [2, 'run.completed']])
  t.same(brief(await runs.eventsSoFar(ended, 2)), [], 'nothing after the last')
  t.same(brief(await runs.eventsSoFar({ ...ended, status: 'running' }, 0)), [[1, 'run.started'], [2, 'run.completed']], 'a running run: what is there')

  const failed = await runs.transition(run._id, ['completed'], 'failed') as RunRecord
  clock.advance(30_001)
  t.same(brief(await runs.eventsSoFar(failed, 2)), [], 'an event whose writer died long ago is not waited for')
})

t.test('a follower does not wait forever for an event whose writer died: it ends once the grace has passed', async (t) => {
  const { clock, runs, run, nextStatusRead, follow } = await setup(t)
  await runs.transition(run._id, ['running'], 'failed', { stopReason: 'error', error: 'gone' })
  const read = nextStatusRead()
  const following = follow(1)
  await read
  await nextStatusRead()
  clock.advance(30_001)
  t.same(brief(await following), [], 'the stream ends without the event that never came')
})

t.test('an id taken by a write still on its way holds back the later events, in order; a gap never filled is passed after the grace', async (t) => {
  const { clock, store, runs, run } = await setup(t)
  const events = store.collection(EVENTS)
  // Two writers overlap: the first numbers its event (2) and is slow to write it; the second numbers and writes 3.
  const taken = await runs.emit(run._id, 'step.finished', {})
  t.equal(taken.id, 2)
  await events.deleteOne({ runId: run._id, seq: 2 })
  await runs.emit(run._id, 'text.delta', { text: 'later' })
  const seen: RunEventT[] = []
  const abort = new AbortController()
  const following = (async () => { for await (const event of runs.follow(run._id, 1, abort.signal)) seen.push(event) })()
  await new Promise((resolve) => setTimeout(resolve, 50))
  t.same(brief(seen), [], 'id 3 waits for id 2')
  await events.insertOne({ _id: `${run._id}-00000002`, runId: run._id, seq: 2, type: 'step.finished', data: {}, at: clock.now() })
  await new Promise((resolve) => setTimeout(resolve, 50))
  t.same(brief(seen), [[2, 'step.finished'], [3, 'text.delta']], 'sent in order once 2 is written')

  // A writer that died with id 4 taken (numbered, never written): after the grace, 5 is sent.
  await store.collection(RUNS).updateOne({ _id: run._id }, { $inc: { eventCount: 1 } })
  await runs.emit(run._id, 'text.delta', { text: 'after' })
  await new Promise((resolve) => setTimeout(resolve, 50))
  t.same(brief(seen).map(([id]) => id), [2, 3], 'held at the gap')
  clock.advance(31_000)
  await new Promise((resolve) => setTimeout(resolve, 50))
  t.same(brief(seen).map(([id]) => id), [2, 3, 5], 'passed over once the grace is over')
  abort.abort()
  await following
})

t.test('events written on this node reach its followers without being read back, in id order, each once', async (t) => {
  // No poll comes in the test's time: every read of the store would be one of the wake-ups.
  const { runs, run } = await setup(t, 60_000)
  const readBack: number[] = []
  const eventsAfter = runs.eventsAfter.bind(runs)
  runs.eventsAfter = async (runId, after) => {
    const found = await eventsAfter(runId, after)
    readBack.push(...found.filter((event) => event.type !== 'run.started').map((event) => event.id))
    return found
  }
  const seen: RunEventT[] = []
  const following = (async () => { for await (const event of runs.follow(run._id, 0, new AbortController().signal)) seen.push(event) })()
  while (seen.length === 0) await new Promise((resolve) => setTimeout(resolve, 5))
  for (const text of ['a', 'b', 'c']) await runs.emit(run._id, 'text.delta', { text })
  const ended = await runs.transition(run._id, ['running'], 'completed', { stopReason: 'end_turn' })
  await runs.announce(ended as RunRecord, 'run.completed', { stopReason: 'end_turn' })
  await following
  t.same(brief(seen), [[1, 'run.started'], [2, 'text.delta'], [3, 'text.delta'], [4, 'text.delta'], [5, 'run.completed']])
  t.same(readBack, [], 'none read back from the store')
})
