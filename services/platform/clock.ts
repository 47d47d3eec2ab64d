/** The one clock. Services take it as a port so tests can move time. */
export interface Clock {
  now (): Date
  nowMs (): number
}

export const systemClock: Clock = {
  now: () => new Date(),
  nowMs: () => Date.now()
}

/** A clock tests can set and advance. */
export class ManualClock implements Clock {
  private ms: number
  constructor (start: Date | number = Date.UTC(2026, 0, 1)) { this.ms = typeof start === 'number' ? start : start.getTime() }
  now (): Date { return new Date(this.ms) }
  nowMs (): number { return this.ms }
  set (at: Date | number): void { this.ms = typeof at === 'number' ? at : at.getTime() }
  advance (ms: number): void { this.ms += ms }
}
