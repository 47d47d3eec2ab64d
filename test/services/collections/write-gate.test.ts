import t from 'tap'
import { WriteGate } from '../../../services/collections/write-gate.js'

/** A promise with its resolver, to hold a step open. */
function held (): { promise: Promise<void>, release: () => void } {
  let release = (): void => {}
  const promise = new Promise<void>((resolve) => { release = resolve })
  return { promise, release }
}
const turn = async (): Promise<void> => { await new Promise((resolve) => setImmediate(resolve)) }

t.test('writers overlap one another', async (t) => {
  const gate = new WriteGate()
  const first = held()
  const log: string[] = []
  const a = gate.write('p/posts', async () => { log.push('a in'); await first.promise; log.push('a out') })
  const b = gate.write('p/posts', async () => { log.push('b in') })
  await b
  t.same(log, ['a in', 'b in'], 'b ran while a was still writing')
  first.release()
  await a
})

t.test('a change waits for writes under way and holds back new ones until it is done', async (t) => {
  const gate = new WriteGate()
  const log: string[] = []
  const writing = held()
  const changing = held()
  const early = gate.write('p/posts', async () => { log.push('early write'); await writing.promise; log.push('early write done') })
  const change = gate.change('p/posts', async () => { log.push('change'); await changing.promise; log.push('change done') })
  await turn()
  const late = gate.write('p/posts', async () => { log.push('late write') })
  const other = gate.write('p/tags', async () => { log.push('other collection') })
  await other
  t.same(log, ['early write', 'other collection'], 'the change waits; another collection does not')
  writing.release()
  await turn()
  t.same(log, ['early write', 'other collection', 'early write done', 'change'])
  changing.release()
  await Promise.all([early, change, late])
  t.same(log.slice(-2), ['change done', 'late write'], 'the late write ran after the change')
})

t.test('changes of one collection run one at a time, and a failure lets go of the gate', async (t) => {
  const gate = new WriteGate()
  const log: string[] = []
  const first = held()
  const one = gate.change('p/posts', async () => { log.push('one'); await first.promise; throw new Error('refused') })
  const two = gate.change('p/posts', async () => { log.push('two'); return 2 })
  await turn()
  t.same(log, ['one'])
  first.release()
  await t.rejects(one, /refused/)
  t.equal(await two, 2)
  t.equal(await gate.write('p/posts', async () => 'written'), 'written', 'writes go on after a failed change')
  await t.rejects(gate.write('p/posts', async () => { throw new Error('write failed') }), /write failed/)
  t.equal(await gate.change('p/posts', async () => 'changed'), 'changed', 'a failed write does not hold back a change')
  t.equal((gate as unknown as { states: Map<string, unknown> }).states.size, 0, 'nothing is kept for idle collections')
})
