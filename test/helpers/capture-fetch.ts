// A fetch for the official SDKs that records the exact request bytes it sends (the body is
// serialised once, recorded, and those same bytes go on the wire) and the response headers.

export interface SentRequest {
  method: string
  url: string
  headers: Headers
  body: Buffer
  /** Status and headers of the answer, once it arrived. */
  response?: { status: number, headers: Headers }
}

export interface CapturingFetch {
  fetch: (input: string | URL | Request, init?: RequestInit) => Promise<Response>
  readonly sent: SentRequest[]
  /** The last request sent; throws when none was. */
  last (): SentRequest
}

export function capturingFetch (): CapturingFetch {
  const sent: SentRequest[] = []
  const capture = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    // `duplex` lets a streamed SDK body (multipart uploads) be turned into bytes here.
    const request = new Request(input, init?.body ? { ...init, duplex: 'half' } : init)
    const body = request.body ? Buffer.from(await request.arrayBuffer()) : Buffer.alloc(0)
    const record: SentRequest = { method: request.method, url: request.url, headers: new Headers(request.headers), body }
    sent.push(record)
    const response = await fetch(request.url, {
      method: request.method,
      headers: request.headers,
      ...(body.length > 0 ? { body } : {}),
      signal: init?.signal ?? request.signal,
      redirect: 'manual'
    })
    record.response = { status: response.status, headers: response.headers }
    return response
  }
  return {
    fetch: capture,
    sent,
    last () {
      const r = sent.at(-1)
      if (r === undefined) throw new Error('no request was sent')
      return r
    }
  }
}
