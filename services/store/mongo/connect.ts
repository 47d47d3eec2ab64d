import { setTimeout as delay } from 'node:timers/promises'
import { MongoClient, MongoServerError, MongoServerSelectionError } from 'mongodb'
import { ConfigError, UnavailableAtStartError } from '../../config.js'
import { clientOptions, deploymentProblem, type HelloAnswer } from './deployment.js'

export interface ConnectOptions {
  /** How long start-up waits for the deployment to answer (MONGODB_CONNECT_TIMEOUT_SECONDS). */
  connectTimeoutMs?: number
  /** Told of each attempt that failed while there is time left to try again. */
  onRetry?: (retry: { attempt: number, reason: string, secondsLeft: number }) => void
}

export const DEFAULT_CONNECT_TIMEOUT_MS = 60_000
// Each attempt waits this long for a primary, so a wait of a minute logs a dozen retries rather than two.
const ATTEMPT_MS = 5_000
const PAUSE_MS = 1_000

/** MONGODB_URL without its password, for messages. */
export function redactedUrl (url: string): string {
  return url.replace(/^(mongodb(?:\+srv)?:\/\/)([^@/]*)@/, (_, scheme: string, credentials: string) => `${scheme}${credentials.split(':')[0]}:***@`)
}

function reasonOf (error: unknown): string {
  const message = error instanceof Error ? error.message : String(error)
  // A replica set without a primary is one electing (or one that lost its majority).
  const topology = error instanceof MongoServerSelectionError ? error.reason?.type : undefined
  return topology === 'ReplicaSetNoPrimary' ? `${message} (the replica set has no primary: an election, or a lost majority)` : message
}

// AuthenticationFailed, Unauthorized: waiting will not change the credentials.
const isRefusal = (error: unknown): boolean => error instanceof MongoServerError && (error.code === 18 || error.code === 13)

/** One attempt with a client of its own, whose server selection lasts `selectionMs`: the deployment's `hello`, from the primary. */
async function probe (url: string, selectionMs: number): Promise<HelloAnswer> {
  const client = new MongoClient(url, { ...clientOptions(url), serverSelectionTimeoutMS: selectionMs, connectTimeoutMS: selectionMs })
  try {
    await client.connect()
    return await client.db('admin').command({ hello: 1 }).catch((error: unknown) => {
      // Servers before 4.4.2 do not know `hello`.
      if (error instanceof MongoServerError && error.code === 59) return { maxWireVersion: 0 }
      throw error
    }) as HelloAnswer
  } finally {
    await client.close()
  }
}

/**
 * The driver's client, connected, once the deployment MONGODB_URL names
 * answers with a primary: start-up outlasts an election or a database that
 * starts after Plinth. A malformed URL, refused credentials or a deployment
 * Plinth cannot use is a ConfigError (exit 78) at once; a deployment that
 * does not answer within the time is an UnavailableAtStartError (exit 69).
 * Both are one line naming MONGODB_URL.
 */
export async function connectWhenReachable (url: string, options: ConnectOptions = {}): Promise<MongoClient> {
  const timeoutMs = options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS
  const deadline = Date.now() + timeoutMs
  let client: MongoClient
  try {
    client = new MongoClient(url, clientOptions(url))
  } catch (error) {
    throw new ConfigError('MONGODB_URL', `is malformed: ${(error as Error).message}`)
  }
  const unreachable = (error: unknown): UnavailableAtStartError =>
    new UnavailableAtStartError('MONGODB_URL', `(${redactedUrl(url)}) did not answer within ${Math.round(timeoutMs / 1000)} s: ${reasonOf(error)}`)
  try {
    for (let attempt = 1; ; attempt++) {
      try {
        const problem = deploymentProblem(await probe(url, Math.max(100, Math.min(ATTEMPT_MS, deadline - Date.now()))))
        if (problem !== null) throw new ConfigError('MONGODB_URL', problem)
        break
      } catch (error) {
        if (error instanceof ConfigError) throw error
        if (isRefusal(error)) throw new ConfigError('MONGODB_URL', `was refused by the server: ${(error as Error).message}`)
        if (Date.now() + PAUSE_MS >= deadline) throw unreachable(error)
        options.onRetry?.({ attempt, reason: reasonOf(error), secondsLeft: Math.ceil((deadline - Date.now()) / 1000) })
        await delay(PAUSE_MS)
      }
    }
    await client.connect().catch((error: unknown) => { throw unreachable(error) })
    return client
  } catch (error) {
    await client.close()
    throw error
  }
}
