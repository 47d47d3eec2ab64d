import { fuzzContract, isCoreOperation } from './fuzz-run.js'

// The platform, project, data and file operations; git, DNS and hosting, and the tracker are fuzzed in files of their own, side by side.
fuzzContract('core', isCoreOperation)
