// Traefik is not packaged for the test machines: this harness reads the dynamic configuration the
// gateway generates and acts on it as Traefik v3 does with its forwardAuth, headers and
// replacePathRegex middlewares (pkg/middlewares/auth/forward.go), so that the config and the door
// are held to one behaviour. What it does:
// - forwardAuth sends a GET to its address, never the original method, with the client's headers
//   less the hop-by-hop ones (and those Connection names), kept to authRequestHeaders when listed;
//   then sets X-Forwarded-For to the peer, X-Forwarded-Method, -Proto, -Host and -Uri from the
//   request itself (trustForwardHeader false: a client's copy is overwritten). Go's client sends no
//   Content-Length header of its own for a body of unknown length: the body (forwardBody) goes
//   chunked, a body over maxBodySize is refused 401 with no body, and none is sent for none;
// - a status outside 200-299 is copied back: the answer's headers less the hop-by-hop ones, its
//   status and body;
// - a 2xx deletes each authResponseHeaders name from the request, then sets it from the answer;
// - a connection error answers 500 with no body; so does the client's timeout, which is 30 s in
//   Traefik (not configurable) and shortened here (timeoutMs) to keep the matrix quick;
// - the headers middleware sets customRequestHeaders (an empty value removes the header) and
//   customResponseHeaders; replacePathRegex rewrites the path; the service forwards the request;
// - through its serversTransport's forwardingTimeouts: no connection within dialTimeout, or no
//   answer's head within responseHeaderTimeout, answers 504 "Gateway Timeout" (Go's net.Error
//   timeout); a refused connection 502 "Bad Gateway".
// Every cell it produces is marked "simulated" in the capability table.
import { once } from "node:events";
import http, { type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { parse } from "yaml";

interface Dynamic {
  http: {
    routers: Record<string, { middlewares: string[]; service: string }>;
    middlewares: Record<
      string,
      {
        forwardAuth?: {
          address: string;
          trustForwardHeader: boolean;
          authRequestHeaders?: string[];
          authResponseHeaders?: string[];
          forwardBody?: boolean;
          maxBodySize?: number;
        };
        headers?: {
          customRequestHeaders?: Record<string, string>;
          customResponseHeaders?: Record<string, string>;
        };
        replacePathRegex?: { regex: string; replacement: string };
      }
    >;
    services: Record<string, { loadBalancer: { servers: { url: string }[]; serversTransport?: string } }>;
    serversTransports?: Record<
      string,
      { forwardingTimeouts?: { dialTimeout?: string; responseHeaderTimeout?: string } }
    >;
  };
}

const HOP_BY_HOP = ["connection", "keep-alive", "te", "trailer", "transfer-encoding", "upgrade"];
/** Traefik's default maxBodySize when forwardBody is on and none is given: -1, no limit. */
const NO_LIMIT = -1;

export interface TraefikHarness {
  readonly origin: string;
  close(): Promise<void>;
}

export async function startTraefikHarness(
  yaml: string,
  options: { readonly timeoutMs: number },
): Promise<TraefikHarness> {
  const config = (parse(yaml) as Dynamic).http;
  const router = Object.values(config.routers)[0];
  if (!router) throw new Error("no router");
  const chain = router.middlewares.map((name) => {
    const middleware = config.middlewares[name];
    if (!middleware) throw new Error(`no middleware ${name}`);
    return middleware;
  });
  const balancer = config.services[router.service]?.loadBalancer;
  const service = balancer?.servers[0]?.url;
  if (!service) throw new Error(`no service ${router.service}`);
  const forwarding = config.serversTransports?.[balancer.serversTransport ?? ""]?.forwardingTimeouts;
  // Traefik's defaults: 30 s to connect, no limit on the answer's head.
  const backendTimeouts = {
    dialMs: forwarding?.dialTimeout ? milliseconds(forwarding.dialTimeout) : 30_000,
    headMs: forwarding?.responseHeaderTimeout ? milliseconds(forwarding.responseHeaderTimeout) : undefined,
  };
  const server = http.createServer(async (req, res) => {
    const body = await readAll(req);
    const headers: IncomingHttpHeaders = { ...req.headers };
    let path = req.url ?? "/";
    const responseHeaders: Record<string, string> = {};
    for (const middleware of chain) {
      const auth = middleware.forwardAuth;
      if (auth) {
        const denied = await forwardAuth(auth, req, headers, body, options.timeoutMs);
        if (denied)
          return answer(res, denied.status, denied.headers, req.method === "HEAD" ? "" : denied.body);
      }
      for (const [name, value] of Object.entries(middleware.headers?.customRequestHeaders ?? {})) {
        if (value === "") delete headers[name.toLowerCase()];
        else headers[name.toLowerCase()] = value;
      }
      for (const [name, value] of Object.entries(middleware.headers?.customResponseHeaders ?? {})) {
        responseHeaders[name.toLowerCase()] = value;
      }
      const replace = middleware.replacePathRegex;
      if (replace) {
        const query = path.indexOf("?");
        const [pathname, search] = query === -1 ? [path, ""] : [path.slice(0, query), path.slice(query)];
        const pattern = new RegExp(replace.regex);
        // Go's regexp replacement: $1 of a group that did not take part is empty.
        if (pattern.test(pathname)) {
          path = `${pathname.replace(pattern, (_all, group: string | undefined) => replace.replacement.replace("$1", group ?? ""))}${search}`;
        }
      }
    }
    for (const name of HOP_BY_HOP) delete headers[name];
    delete headers["content-length"];
    if (body.length > 0) headers["content-length"] = String(body.length);
    let upstream: Answer;
    try {
      upstream = await call(`${service}${path}`, req.method ?? "GET", headers, body, 10_000, backendTimeouts);
    } catch (error) {
      if (error === TIMED_OUT) return answer(res, 504, {}, "Gateway Timeout");
      return answer(res, 502, {}, "Bad Gateway");
    }
    const out: Record<string, string> = {};
    for (const [name, value] of Object.entries(upstream.headers)) {
      if (!HOP_BY_HOP.includes(name) && name !== "content-length" && typeof value === "string")
        out[name] = value;
    }
    answer(res, upstream.status, { ...out, ...responseHeaders }, req.method === "HEAD" ? "" : upstream.body);
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    async close() {
      server.closeAllConnections();
      await new Promise((done) => server.close(done));
    },
  };
}

interface Answer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
}

/** Traefik's forwardAuth: undefined to go on, or the answer the client gets. */
async function forwardAuth(
  auth: NonNullable<Dynamic["http"]["middlewares"][string]["forwardAuth"]>,
  req: http.IncomingMessage,
  headers: IncomingHttpHeaders,
  body: Buffer,
  timeoutMs: number,
): Promise<{ status: number; headers: Record<string, string>; body: Buffer | string } | undefined> {
  let sent: Buffer | undefined;
  if (auth.forwardBody && body.length > 0) {
    const limit = auth.maxBodySize ?? NO_LIMIT;
    if (limit >= 0 && body.length > limit) return { status: 401, headers: {}, body: "" };
    sent = body;
  }
  const connectionNames = String(headers.connection ?? "")
    .split(",")
    .map((name) => name.trim().toLowerCase())
    .filter((name) => name !== "");
  let check: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (HOP_BY_HOP.includes(name) || connectionNames.includes(name) || value === undefined) continue;
    // Go's client writes its own Host and framing headers.
    if (name === "host" || name === "content-length") continue;
    check[name] = Array.isArray(value) ? value.join(", ") : value;
  }
  if (auth.authRequestHeaders && auth.authRequestHeaders.length > 0) {
    const kept: Record<string, string> = {};
    for (const name of auth.authRequestHeaders) {
      const value = check[name.toLowerCase()];
      if (value !== undefined) kept[name.toLowerCase()] = value;
    }
    check = kept;
  }
  check["x-forwarded-for"] = req.socket.remoteAddress ?? "";
  check["x-forwarded-method"] = req.method ?? "GET";
  check["x-forwarded-proto"] = "http";
  if (req.headers.host) check["x-forwarded-host"] = req.headers.host;
  check["x-forwarded-uri"] = req.url ?? "/";
  check["user-agent"] ??= "Go-http-client/1.1";
  check["accept-encoding"] = "gzip";
  let result: Answer;
  try {
    result = await call(auth.address, "GET", check, sent, timeoutMs);
  } catch {
    return { status: 500, headers: { "content-length": "0" }, body: "" };
  }
  if (result.status < 200 || result.status >= 300) {
    const copied: Record<string, string> = {};
    for (const [name, value] of Object.entries(result.headers)) {
      if (!HOP_BY_HOP.includes(name) && typeof value === "string") copied[name] = value;
    }
    return { status: result.status, headers: copied, body: result.body };
  }
  for (const name of auth.authResponseHeaders ?? []) {
    const key = name.toLowerCase();
    delete headers[key];
    const value = result.headers[key];
    if (typeof value === "string") headers[key] = value;
  }
  return undefined;
}

function answer(
  res: http.ServerResponse,
  status: number,
  headers: Record<string, string>,
  body: string | Buffer,
) {
  res.writeHead(status, { ...headers, "content-length": Buffer.byteLength(body) });
  res.end(body);
}

function readAll(stream: NodeJS.ReadableStream): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    stream.on("data", (chunk: Buffer) => chunks.push(chunk));
    stream.on("end", () => resolve(Buffer.concat(chunks)));
    stream.on("error", reject);
  });
}

/** A Go duration as the generated config writes it ("500ms", "2s") in milliseconds. */
function milliseconds(duration: string): number {
  const found = /^(\d+(?:\.\d+)?)(ms|s)$/.exec(duration);
  if (!found) throw new Error(`a duration the harness does not read: ${duration}`);
  return Number(found[1]) * (found[2] === "s" ? 1000 : 1);
}

/** A transport timeout (dial or the answer's head): Go's net.Error with Timeout() true. */
const TIMED_OUT = new Error("timeout");

/** A body of unknown length goes chunked, as Go's client sends forwardAuth's. */
function call(
  url: string,
  method: string,
  headers: IncomingHttpHeaders | Record<string, string>,
  body: Buffer | undefined,
  timeoutMs: number,
  transport?: { readonly dialMs: number; readonly headMs: number | undefined },
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    // Node's client frames a GET's body only when told; Go's sends it chunked.
    const framed =
      body !== undefined && body.length > 0 && headers["content-length"] === undefined
        ? { ...headers, "transfer-encoding": "chunked" }
        : headers;
    const req = http.request(url, { method, headers: framed, agent: false }, (res) => {
      readAll(res).then(
        (text) => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }),
        reject,
      );
    });
    req.setTimeout(timeoutMs, () => req.destroy(new Error("timeout")));
    if (transport) {
      const dialing = setTimeout(() => req.destroy(TIMED_OUT), transport.dialMs);
      req.on("socket", (socket) => socket.once("connect", () => clearTimeout(dialing)));
      const head =
        transport.headMs === undefined
          ? undefined
          : setTimeout(() => req.destroy(TIMED_OUT), transport.headMs);
      req.on("response", () => clearTimeout(head));
      req.on("close", () => {
        clearTimeout(dialing);
        clearTimeout(head);
      });
    }
    req.on("error", reject);
    if (body !== undefined && body.length > 0) req.write(body);
    req.end();
  });
}
