/** The git scenario group's row names, for BENCH_ONLY (`BENCH_ONLY=git` runs them all and nothing else). */
export const GIT_ROWS = {
  clone: 'git clone, 2,000 commits',
  fetch: 'git fetch of 3 new commits',
  tree: 'GET git tree (platform JWT)',
  blob: 'GET git blob (platform JWT)'
} as const

export const GIT_GROUP: string[] = Object.values(GIT_ROWS)
