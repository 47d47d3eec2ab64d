import { createServer } from 'node:net'

/**
 * Loopback ports for instances: the kernel picks a free one, and ports this
 * driver has handed out stay reserved until released, so two instances
 * starting at once never get the same.
 */
export class PortAllocator {
  private readonly reserved = new Set<number>()

  async allocate (): Promise<number> {
    for (;;) {
      const port = await freePort()
      if (!this.reserved.has(port)) { this.reserved.add(port); return port }
    }
  }

  /** Keeps a port an adopted instance already listens on. */
  reserve (port: number): void {
    this.reserved.add(port)
  }

  release (port: number): void {
    this.reserved.delete(port)
  }
}

async function freePort (): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    // A probe in this process: through a cluster primary it would bind (and hold a place among) the primary's handles.
    server.listen({ port: 0, host: '127.0.0.1', exclusive: true }, resolve)
  })
  const address = server.address() as { port: number }
  await new Promise(resolve => server.close(resolve))
  return address.port
}
