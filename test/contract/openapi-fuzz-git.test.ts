import { fuzzContract, isGitOperation } from './fuzz-run.js'

fuzzContract('git', isGitOperation)
