/**
 * Orders record writes against definition changes of the same collection
 * within this process. A change waits for the record writes under way and
 * holds back new ones until it is saved, so the scans that check existing
 * records against the new definition (required fields, retyped fields) see
 * every record the old definition let in, and every later write is checked
 * against the new one. Changes of one collection also run one at a time.
 *
 * Writers never wait for each other. Another process sharing the data is not
 * covered: a record written there between a scan and the save can still slip
 * past (docs/data.md says so).
 */

/** The gate key of one collection of one project. */
export function collectionKey (projectId: string, name: string): string {
  return `${projectId}\n${name}`
}

interface GateState {
  writers: number
  /** Settles when the change holding the gate is done. */
  changing: Promise<void> | null
  /** Called when the last writer leaves while a change waits. */
  drained: (() => void) | null
}

export class WriteGate {
  private readonly states = new Map<string, GateState>()

  /** Runs a record write, after any change of the collection under way. */
  async write<T> (key: string, run: () => Promise<T>): Promise<T> {
    const state = await this.enter(key, (entered) => { entered.writers++ })
    try {
      return await run()
    } finally {
      state.writers--
      this.settle(key, state)
    }
  }

  /** Runs a definition change alone: no record write of the collection overlaps it. */
  async change<T> (key: string, run: () => Promise<T>): Promise<T> {
    let done = (): void => {}
    const state = await this.enter(key, (entered) => { entered.changing = new Promise<void>((resolve) => { done = resolve }) })
    try {
      if (state.writers > 0) {
        const held = state
        await new Promise<void>((resolve) => { held.drained = resolve })
      }
      return await run()
    } finally {
      state.changing = null
      state.drained = null
      done()
      this.settle(key, state)
    }
  }

  /**
   * Waits until no change holds the collection, then claims it with `claim` in
   * the same tick: any later turn would let a rival in between.
   */
  private async enter (key: string, claim: (state: GateState) => void): Promise<GateState> {
    let state = this.states.get(key)
    while (state?.changing != null) {
      await state.changing
      state = this.states.get(key)
    }
    if (state === undefined) {
      state = { writers: 0, changing: null, drained: null }
      this.states.set(key, state)
    }
    claim(state)
    return state
  }

  private settle (key: string, state: GateState): void {
    if (state.writers === 0 && state.drained !== null) state.drained()
    if (state.writers === 0 && state.changing === null && this.states.get(key) === state) this.states.delete(key)
  }
}
