/** The git scenario group's row names, for BENCH_ONLY (`BENCH_ONLY=git` runs them all and nothing else). */
export const GIT_ROWS = {
  clone: 'git clone, 2,000 commits',
  fetch: 'git fetch of 3 new commits',
  treeLoose: 'GET git tree, tip loose (JWT)',
  blobLoose: 'GET git blob, tip loose (JWT)',
  treePacked: 'GET git tree, all packed (JWT)',
  blobPacked: 'GET git blob, all packed (JWT)'
} as const

export const GIT_GROUP: string[] = Object.values(GIT_ROWS)
