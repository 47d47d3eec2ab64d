import { chmodSync, closeSync, openSync, statSync } from 'node:fs'

/**
 * The file holds password and token hashes and sealed secrets: readable by
 * its owner only, like master.key. SQLite gives the -wal and -shm files the
 * database file's mode, so a private database makes all three private; files
 * an earlier version left readable to others are narrowed too.
 */
export function keepPrivate (file: string): void {
  closeSync(openSync(file, 'a', 0o600))
  for (const path of [file, `${file}-wal`, `${file}-shm`]) {
    let mode: number
    try {
      mode = statSync(path).mode
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue
      throw error
    }
    if ((mode & 0o077) !== 0) chmodSync(path, mode & 0o700)
  }
}
