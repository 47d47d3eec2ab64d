import { errorCatalogue } from '../platform/errors.js'

/** The codes of the web console's static pages (served at /console, outside the API's contract). */
export const consoleErrors = errorCatalogue('console', {
  notBuilt: {
    code: 'APP_CONSOLE_NOT_BUILT',
    status: 503,
    message: 'The console is not built on this server: run `npm run build` (npm ci does it) and restart',
    description: 'the console\'s build output is missing on this server'
  }
})
