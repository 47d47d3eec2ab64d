#!/usr/bin/env node
// The `plinth` command, built to dist/ by `npm run build` (the repository's prepare step runs it).
import { main } from '../dist/cli/plinth.js'

process.exitCode = await main(process.argv.slice(2))
