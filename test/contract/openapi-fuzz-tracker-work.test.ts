import { fuzzContract, isTrackerWorkOperation } from './fuzz-run.js'

// Tracker projects, their settings, work items and what hangs off them but attachments; the planning side has a file of its own.
fuzzContract('tracker work', isTrackerWorkOperation)
