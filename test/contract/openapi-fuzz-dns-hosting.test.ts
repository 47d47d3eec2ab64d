import { fuzzContract, isDnsOrHostingOperation } from './fuzz-run.js'

fuzzContract('DNS and hosting', isDnsOrHostingOperation)
