import type { Test } from 'tap'
import t from 'tap'
import fc from 'fast-check'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { fileURLToPath } from 'node:url'
import { buildTestApp } from '../helper.js'
import { contractViolation, errorCode, loadContract, type Operation } from './openapi-contract.js'
import { FuzzWorld } from './fuzz-world.js'
import { describeExchange, draftArbitrary, resolveDraft, send } from './fuzz-requests.js'

/**
 * Every operation in openapi.yaml, fuzzed through the real app: path
 * parameters naming real fixtures or junk, query strings and bodies from the
 * operation's own schemas and bent out of them, and every kind of credential
 * (none, garbage, each real kind, another project's, expired ones). No
 * answer may be a 5xx, every status answered is one the operation declares,
 * and every /api answer is the envelope (its `details` of the one declared
 * shape) unless the contract declares that status as something else (a
 * redirect, a 304, a file's bytes).
 *
 * The contract is fuzzed in shards, one test file each (core, git, DNS and
 * hosting, the tracker), so tap runs them side by side within its per-file timeout.
 *
 * Bounded: FUZZ_RUNS requests per operation (default 50). The seed is printed
 * first; FUZZ_SEED=<seed> replays a run, FUZZ_SEED=random draws a new one,
 * and FUZZ_ONLY=<operationId regex> narrows it to some operations.
 */

const RUNS = Number(process.env.FUZZ_RUNS ?? 50)
// Fixed unless asked otherwise, so CI runs the same requests every time; FUZZ_SEED=random explores afresh.
const DEFAULT_SEED = 20261125
const SEED = process.env.FUZZ_SEED === 'random' ? Math.floor(Math.random() * 2 ** 31) : Number(process.env.FUZZ_SEED ?? DEFAULT_SEED)
const ONLY = process.env.FUZZ_ONLY === undefined ? null : new RegExp(process.env.FUZZ_ONLY)

/** Refusals that come before an operation's own logic: a request that only ever got these never reached it. */
const GATE_CODES = new Set([
  'APP_VALIDATION_FAILED', 'APP_ROUTE_NOT_FOUND', 'APP_METHOD_NOT_ALLOWED', 'APP_UNAUTHORIZED', 'APP_INVALID_TOKEN', 'APP_WRONG_TOKEN_KIND', 'APP_INVALID_SERVICE_TOKEN', 'APP_INVALID_JSON',
  'APP_UNSUPPORTED_MEDIA_TYPE', 'APP_BAD_URL', 'APP_PAYLOAD_TOO_LARGE', 'APP_INVALID_CONTENT_TYPE', 'APP_INVALID_CONTENT_LENGTH', 'APP_BAD_REQUEST'
])

/** Answers of the router, for a URL that fuzzing bent into no operation's path or into another method's. */
const ROUTER_CODES = new Set(['APP_ROUTE_NOT_FOUND', 'APP_METHOD_NOT_ALLOWED'])

function operationSeed (operation: Operation): number {
  let hash = SEED
  for (const char of operation.operationId) hash = Math.imul(hash ^ char.charCodeAt(0), 16777619)
  return hash | 0
}

/** Stands in for an OpenID provider: discovery answers, token requests are refused, so callbacks run to their error redirect. */
async function fakeIssuer (): Promise<string> {
  let base = ''
  const server = createServer((request, response) => {
    const send = (status: number, body: unknown): void => { response.writeHead(status, { 'content-type': 'application/json' }); response.end(JSON.stringify(body)) }
    if (request.url === '/.well-known/openid-configuration') {
      send(200, { issuer: base, authorization_endpoint: `${base}/authorize`, token_endpoint: `${base}/token`, jwks_uri: `${base}/jwks` })
    } else if (request.url === '/jwks') {
      send(200, { keys: [] })
    } else {
      send(400, { error: 'invalid_grant' })
    }
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  server.unref()
  t.teardown(() => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()) }))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return base
}

/** The operations of one shard of the contract (a file of its own, so tap runs the shards side by side). */
export type Shard = (operation: Operation) => boolean

export const isGitOperation: Shard = (operation) => operation.path.startsWith('/git/') || operation.path.startsWith('/api/projects/{projectId}/git')
export const isDnsOrHostingOperation: Shard = (operation) => operation.path.startsWith('/api/projects/{projectId}/dns') || operation.path.startsWith('/api/projects/{projectId}/backend')
export const isTrackerOperation: Shard = (operation) => operation.path.startsWith('/api/projects/{projectId}/tracker')
const PLANNING = /\/tracker\/projects\/\{lpId\}\/(cycles|modules|views|intake|pages)|\/attachments/
/** The tracker's planning (cycles, modules, views, intake, pages) and attachments, beside the rest of it. */
export const isTrackerPlanningOperation: Shard = (operation) => isTrackerOperation(operation) && PLANNING.test(operation.path)
export const isTrackerWorkOperation: Shard = (operation) => isTrackerOperation(operation) && !PLANNING.test(operation.path)
export const isCoreOperation: Shard = (operation) => !isGitOperation(operation) && !isDnsOrHostingOperation(operation) && !isTrackerOperation(operation)

export function fuzzContract (name: string, shard: Shard): void {
  // The core shard alone takes over two minutes of a quiet 2-core machine, and tap runs it beside two other files
  // (.taprc's jobs); on a machine loaded beyond that it has needed six. A hang guard, not a speed check.
  t.setTimeout(600_000)
  t.test(`every ${name} operation in openapi.yaml: no 5xx, every /api answer in the envelope`, async (t: Test) => {
    const contract = loadContract(fileURLToPath(new URL('../../openapi.yaml', import.meta.url)))
    const app = await buildTestApp(t, {
      env: {
        // The limiter has its own tests; here it would turn most sign-ins into 429s before they reach the code under test.
        AUTH_RATE_LIMIT_MAX: '1000000',
        GOOGLE_CLIENT_ID: 'fuzz',
        GOOGLE_CLIENT_SECRET: 'fuzz',
        GOOGLE_ISSUER: await fakeIssuer(),
        // The fake issuer listens on loopback, which the address guard refuses unless allowed.
        SSO_ALLOWED_HOSTS: '127.0.0.1',
        // Nothing listens on the discard port: start and callback take the provider-unavailable path.
        MICROSOFT_CLIENT_ID: 'fuzz',
        MICROSOFT_CLIENT_SECRET: 'fuzz',
        MICROSOFT_ISSUER: 'http://127.0.0.1:9'
      }
    })
    const world = await FuzzWorld.create(app)
    t.comment(`seed ${SEED} (FUZZ_SEED=${SEED} replays), ${RUNS} runs per operation`)

    const operations = contract.operations.filter((operation) => shard(operation) && (ONLY === null || ONLY.test(operation.operationId)))
    t.ok(operations.length > 0 || ONLY !== null, 'the contract has operations to fuzz')
    let total = 0

    for (const operation of operations) {
      await t.test(`${operation.method} ${operation.path} (${operation.operationId})`, async (t) => {
        const statuses = new Map<string, number>()
        const undeclared = new Set<number>()
        let reached = 0
        let arbitrary
        try {
          arbitrary = draftArbitrary(operation, contract)
        } catch (error) {
          t.fail(`cannot be exercised: ${(error as Error).message}`)
          return
        }
        const property = fc.asyncProperty(arbitrary, async (draft) => {
          const sent = await resolveDraft(operation, draft, world)
          const answer = await send(app, sent)
          total++
          const code = errorCode(answer)
          const key = `${answer.statusCode}${code === undefined ? '' : ` ${code}`}`
          statuses.set(key, (statuses.get(key) ?? 0) + 1)
          if (answer.statusCode < 400 || (code !== undefined && !GATE_CODES.has(code))) reached++
          if (operation.responses[String(answer.statusCode)] === undefined && !ROUTER_CODES.has(code ?? '')) undeclared.add(answer.statusCode)
          const violation = contractViolation(contract, operation, sent.url.split('?')[0], answer)
          if (violation !== null) throw new Error(`${violation}\n${describeExchange(sent, answer)}`)
          if (operation.method !== 'GET' && answer.statusCode < 300) await world.repair(isTrackerOperation(operation) ? 'tracker' : undefined)
        })
        try {
          await fc.assert(property, { numRuns: RUNS, seed: operationSeed(operation), includeErrorInReport: true })
        } catch (error) {
          t.fail(`${(error as Error).message}\nreplay the run with FUZZ_SEED=${SEED} FUZZ_ONLY='^${operation.operationId}$'`)
        }
        t.comment([...statuses].sort().map(([status, n]) => `${status} ×${n}`).join(', '))
        t.same([...undeclared].sort(), [], `every status ${operation.operationId} answered is declared in openapi.yaml`)
        t.ok(reached > 0, `some request got past validation and authentication to ${operation.operationId}'s own logic`)
      })
    }

    if (world.rebuilt.size > 0) t.comment(`fixtures rebuilt after fuzzed requests destroyed them: ${[...world.rebuilt].map(([what, n]) => `${what} ×${n}`).join(', ')}`)
    t.comment(`${total} requests over ${operations.length} operations`)
  })
}
