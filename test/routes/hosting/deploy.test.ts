import t from 'tap'
import { appSuite } from './app-suite.js'

t.test('the app suite on the process driver', async (t) => { await appSuite(t, {}) })
