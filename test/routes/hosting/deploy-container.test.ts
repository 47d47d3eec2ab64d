import t from 'tap'
import { startPodman } from '../../services/hosting/podman-engine.js'
import { appSuite } from './app-suite.js'

t.test('the app suite on the container driver, against Podman\'s Docker-compatible API', async (t) => {
  const engine = await startPodman(t)
  if (engine === null) return
  await appSuite(t, { HOSTING_DRIVER: 'container', HOSTING_DOCKER_SOCKET: engine.socketPath, HOSTING_BASE_IMAGE: engine.baseImage })
})
