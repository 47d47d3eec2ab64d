import { chown, readdir } from 'node:fs/promises'
import { join } from 'node:path'

/** Hands a tree the build wrote back to the server's user, so the sandbox user cannot change an artifact later. */
export async function ownTree (dir: string, owner: { uid: number, gid: number }): Promise<void> {
  await chown(dir, owner.uid, owner.gid)
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) await ownTree(path, owner)
    else if (entry.isFile()) await chown(path, owner.uid, owner.gid)
  }
}
