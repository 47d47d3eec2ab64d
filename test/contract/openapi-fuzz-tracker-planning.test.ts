import { fuzzContract, isTrackerPlanningOperation } from './fuzz-run.js'

// Cycles, modules, views, intake, pages and attachments.
fuzzContract('tracker planning', isTrackerPlanningOperation)
