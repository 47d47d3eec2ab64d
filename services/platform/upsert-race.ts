import { DuplicateKeyError } from '../store/errors.js'

/**
 * Runs an upsert a second time when it lost a race. Two first upserts of one
 * key may both find nothing and both insert; on MongoDB the loser then fails
 * with a duplicate key (E11000) instead of updating the winner's document.
 * Run again, it finds that document and updates it. A second duplicate key
 * is a real conflict (another unique field) and is thrown.
 */
export async function retryUpsertRace<T> (upsert: () => Promise<T>): Promise<T> {
  try {
    return await upsert()
  } catch (error) {
    if (!(error instanceof DuplicateKeyError)) throw error
    return await upsert()
  }
}
