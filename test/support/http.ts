// An HTTP client that shows exactly what came back: status, headers and the whole body.
import http from "node:http";

export interface Answer {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: string;
  json<T = unknown>(): T;
}

export interface RequestOptions {
  readonly method?: string;
  readonly headers?: Record<string, string>;
  readonly body?: string | Buffer;
  /** A bearer key: sets Authorization: Bearer <key>. */
  readonly key?: string;
  /** The address to connect from (another loopback address, 127.0.0.2, is another peer). */
  readonly localAddress?: string;
}

/** One HTTP/1.1 request on its own connection; the body is returned whole, as text. */
export function request(url: string, options: RequestOptions = {}): Promise<Answer> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.key !== undefined) headers.authorization = `Bearer ${options.key}`;
  if (options.body !== undefined && headers["content-type"] === undefined)
    headers["content-type"] = "application/json";
  return new Promise((resolveAnswer, rejectAnswer) => {
    const how = {
      method: options.method ?? "GET",
      headers,
      agent: false,
      ...(options.localAddress === undefined ? {} : { localAddress: options.localAddress }),
    };
    const req = http.request(url, how, (res) => {
      answerOf(res).then(resolveAnswer, rejectAnswer);
    });
    req.on("error", rejectAnswer);
    req.end(options.body);
  });
}

/** A response read whole: its status, headers and body as text. */
export function answerOf(res: http.IncomingMessage): Promise<Answer> {
  return new Promise((resolveAnswer, rejectAnswer) => {
    const chunks: Buffer[] = [];
    res.on("data", (chunk: Buffer) => chunks.push(chunk));
    res.on("error", rejectAnswer);
    res.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      resolveAnswer({
        status: res.statusCode ?? 0,
        headers: res.headers,
        body,
        json: <T>() => JSON.parse(body) as T,
      });
    });
  });
}
