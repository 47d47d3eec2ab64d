import neostandard from 'neostandard'

/** Route folders on the second edition of the family template (every one), whose files read as tables. */
const CONVERTED_ROUTES = [
  'routes/admin/**', 'routes/assistant/**', 'routes/auth/**', 'routes/auxiliary/**', 'routes/collections/**', 'routes/data/**', 'routes/dns/**', 'routes/git/**',
  'routes/health/**', 'routes/hosting/**', 'routes/llm/**', 'routes/organizations/**', 'routes/permissions/**',
  'routes/project-auth/**', 'routes/projects/**', 'routes/tracker/**'
]

const codeLiteral = 'an error code belongs in a catalogue: throw `<family>Errors.name(…)` and list it in the route\'s config.errors'

// neostandard, as fastify/demo uses, with its TypeScript rules on.
export default [
  ...neostandard({ ts: true, ignores: ['node_modules', 'dist', 'coverage', '.tap', 'sdk/dist', 'sdk/generated', 'console/dist'] }),
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
    ignores: ['test/**', 'bench/**', 'sdk/**', 'services/platform/errors.ts', 'services/*/errors.ts', 'schemas/envelope.ts'],
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
    // Plugins point backwards only: they wire services and the http/ helpers, and never reach into a route folder.
    files: ['plugins/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ group: ['**/routes/**'], message: 'plugins never import routes: routes/index.ts mounts them, after the plugins' }] }]
    }
  },
  {
    // The HTTP layer's helpers that are no plugins sit under the plugins that use them.
    files: ['http/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ group: ['**/plugins/**', '**/routes/**'], message: 'http/ helpers never import plugins or routes: plugins use them' }] }]
    }
  },
  {
    // The SDK's browser-safe entries run in browsers too: Node's modules only in sdk/node and sdk/cli.
    files: ['sdk/client/**/*.ts', 'sdk/admin/**/*.ts', 'sdk/core/**/*.ts', 'sdk/examples/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        patterns: [
          { regex: '^node:', message: 'the client and admin entries run in browsers: Node-only code goes in sdk/node or sdk/cli' },
          { group: ['**/sdk/node/**', '**/sdk/cli/**', '../node/*', '../cli/*'], message: 'the browser-safe entries never import the Node-only ones' }
        ],
        paths: ['fs', 'path', 'os', 'crypto', 'child_process', 'stream', 'buffer', 'util', 'url', 'http', 'https', 'net', 'events']
          .map((name) => ({ name, message: 'a Node module: Node-only code goes in sdk/node or sdk/cli' }))
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
