import neostandard from 'neostandard'

// neostandard, as fastify/demo uses, with its TypeScript rules on.
export default [
  ...neostandard({ ts: true, ignores: ['node_modules', 'dist', 'coverage', '.tap', 'test/contract/generated'] }),
  {
    rules: {
      // `void reply.header(…)` marks a chained reply call whose returned promise is deliberately not awaited.
      'no-void': ['error', { allowAsStatement: true }],
      // Input validation matches control characters on purpose (header values, file names, SSH keys).
      'no-control-regex': 'off',
      // A TypeBox schema and its Static<> type share one name by design; tsc reports real redeclarations.
      '@typescript-eslint/no-redeclare': 'off'
    }
  }
]
