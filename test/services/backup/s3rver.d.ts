/** The part of s3rver (no types of its own) the S3 test uses: a real S3-compatible server on loopback. */
declare module 's3rver' {
  interface S3rverOptions {
    port: number
    address: string
    silent: boolean
    directory: string
    configureBuckets: Array<{ name: string, configs: string[] }>
  }
  export default class S3rver {
    constructor (options: S3rverOptions)
    run (): Promise<{ address: string, port: number }>
    close (): Promise<void>
    /** An S3 event notification for each object made (`ObjectCreated:Put`, `ObjectCreated:Post` for a completed multipart upload). */
    on (event: 'event', listener: (event: { Records: Array<{ eventName: string }> }) => void): this
  }
}
