import neostandard from 'neostandard'

/**
 * Folders and files whose error codes are still written as `APP_*` literals
 * rather than thrown from a catalogue (services/<family>/errors.ts, or the
 * shared one in services/errors.ts). A family leaves this list when it is
 * converted (docs/architecture.md, "Adding a route family"); once it is
 * empty, the rule holds everywhere.
 */
const CODES_NOT_YET_IN_CATALOGUES = [
  'routes/hosting/**',
  'services/hosting/**',
  'plugins/cors.ts',
  'plugins/hosting.ts'
]

/** Route folders converted to the second edition of the family template, whose files read as tables. */
const CONVERTED_ROUTES = [
  'routes/auth/**', 'routes/collections/**', 'routes/data/**', 'routes/dns/**', 'routes/git/**', 'routes/health/**', 'routes/llm/**',
  'routes/organizations/**', 'routes/permissions/**', 'routes/project-auth/**', 'routes/projects/**', 'routes/tracker/**'
]

const codeLiteral = 'an error code belongs in a catalogue: throw `<family>Errors.name(…)` and list it in the route\'s config.errors'

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
  },
  {
    // Each code is declared once, in its catalogue; tests and benches name codes to check the contract.
    files: ['**/*.ts'],
    // The envelope's schema names codes as examples of its `code` field (schemas import nothing of ours).
    ignores: ['test/**', 'bench/**', 'services/errors.ts', 'services/*/errors.ts', 'schemas/envelope.ts', ...CODES_NOT_YET_IN_CATALOGUES],
    rules: {
      'no-restricted-syntax': ['error',
        // At a word's start, so a variable such as HOSTING_APP_ALLOWED_RANGES is not taken for a code.
        { selector: 'Literal[value=/\\bAPP_[A-Z]/]', message: codeLiteral },
        { selector: 'TemplateElement[value.raw=/\\bAPP_[A-Z]/]', message: codeLiteral }]
    }
  },
  {
    // The layer rule: services are plain TypeScript under the HTTP layer.
    files: ['services/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        patterns: [
          { group: ['fastify', 'fastify-plugin', '@fastify/*'], message: 'services never import Fastify: the HTTP layer is routes and plugins' },
          { group: ['**/plugins/**', '**/routes/**'], message: 'services never import plugins or routes: they point the other way' }
        ]
      }]
    }
  },
  {
    files: ['schemas/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ group: ['../*', '!./*'], message: 'schemas import nothing of ours but other schemas' }] }]
    }
  },
  {
    files: ['routes/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ group: ['**/services/store/**'], message: 'a route never touches the Store: a service does' }] }]
    }
  },
  {
    files: ['routes/**/*.ts'],
    rules: {
      'no-restricted-properties': ['error', { object: 'app', property: 'store', message: 'a route never touches the Store: a service does' }]
    }
  },
  {
    files: CONVERTED_ROUTES,
    rules: {
      // A route file reads as a table: one declaration a line, descriptions over several lines.
      '@stylistic/max-len': ['error', { code: 140, ignoreUrls: true }]
    }
  }
]
