// Cross-origin calls from browsers, for the origins the deployment names and no other. Off by
// default. A preflight (OPTIONS with Access-Control-Request-Method) carries no key, so it is
// answered here, before routing and authentication; every other answer to a configured origin,
// errors included, gets Access-Control-Allow-Origin so the page can read it.
import type { JSONSchemaType } from "ajv";
import type { LocalReply } from "../../src/policy.ts";
import { definePolicy } from "../../src/policy.ts";

export interface CorsOptions {
  /** Exact origins (scheme://host[:port]) allowed to call, or ["*"] for any; empty: CORS off. */
  readonly allowedOrigins: readonly string[];
  /** Request headers a page may send (Authorization for the key, Content-Type for JSON). */
  readonly allowedHeaders: readonly string[];
  /** Response headers a page may read besides the CORS-safelisted ones; default: every header the gateway adds. */
  readonly exposedHeaders: readonly string[] | undefined;
  /** How long a browser may cache a preflight answer. */
  readonly maxAgeSeconds: number;
}

const HEADER_NAME = "^[A-Za-z0-9!#$%&'*+.^_`|~-]+$";

const optionsSchema: JSONSchemaType<CorsOptions> = {
  type: "object",
  additionalProperties: false,
  required: [],
  description:
    "Cross-origin calls from browsers, for the origins the deployment names and no other; off by default",
  properties: {
    allowedOrigins: {
      description:
        'Exact origins (`scheme://host[:port]`) allowed to call, or `["*"]` alone for any; empty: CORS off',
      type: "array",
      items: {
        type: "string",
        anyOf: [
          { const: "*" },
          {
            type: "string",
            pattern: "^https?://[A-Za-z0-9.-]+(?::[0-9]{1,5})?$",
            // Named in the start-up error: a pasted page URL is the usual mistake.
            description: "an origin such as https://shop.example (scheme, host and optional port, no path)",
          },
        ],
      },
      uniqueItems: true,
      default: [],
    },
    allowedHeaders: {
      type: "array",
      items: { type: "string", pattern: HEADER_NAME },
      default: ["authorization", "content-type", "x-request-id"],
      description: "Request headers a page may send (`Access-Control-Allow-Headers`)",
    },
    exposedHeaders: {
      type: "array",
      nullable: true,
      items: { type: "string", pattern: HEADER_NAME },
      description:
        "Response headers a page may read (`Access-Control-Expose-Headers`). Unset: every header the gateway adds, as the core and each policy declare them; `[]`: none",
    },
    maxAgeSeconds: {
      type: "integer",
      minimum: 0,
      maximum: 86_400,
      default: 600,
      description: "How long a browser may cache a preflight answer (`Access-Control-Max-Age`)",
    },
  },
};

export default definePolicy<CorsOptions>({
  name: "cors",
  optionsSchema,
  create(options, { api, responseHeaders }) {
    if (options.allowedOrigins.length === 0) return { forOperation: () => undefined };
    const anyOrigin = options.allowedOrigins.includes("*");
    if (anyOrigin && options.allowedOrigins.length > 1) {
      throw new Error('policies.cors.allowedOrigins: "*" allows every origin and stands alone');
    }
    // Browsers send the origin lower-cased for scheme and host; compare the same way.
    const origins = new Set(options.allowedOrigins.map((origin) => origin.toLowerCase()));
    const allowHeaders = options.allowedHeaders.join(", ");
    // The other policies are not all created yet: the list is made on the first answer.
    let exposeHeaders: string | undefined;
    const maxAge = String(options.maxAgeSeconds);

    return {
      onArrival(exchange): LocalReply | undefined {
        const { headers } = exchange;
        // The answer depends on Origin: caches must keep one copy per origin.
        if (!anyOrigin) exchange.responseHeaders.vary = "Origin";
        const origin = headers.origin;
        if (origin === undefined || !(anyOrigin || origins.has(origin.toLowerCase()))) return undefined;
        const allowOrigin = anyOrigin ? "*" : origin;
        const requested = headers["access-control-request-method"];
        if (exchange.method === "OPTIONS" && requested !== undefined) {
          // Only for an operation that exists: a preflight is no way to probe for others.
          const path = exchange.url.split("?", 1)[0] as string;
          if (api.router.match(requested, path).kind !== "operation") return undefined;
          return {
            status: 204,
            reason: "cors preflight",
            headers: {
              "access-control-allow-origin": allowOrigin,
              "access-control-allow-methods": requested,
              "access-control-allow-headers": allowHeaders,
              "access-control-max-age": maxAge,
            },
          };
        }
        exchange.responseHeaders["access-control-allow-origin"] = allowOrigin;
        exposeHeaders ??= (options.exposedHeaders ?? responseHeaders()).join(", ");
        if (exposeHeaders !== "") exchange.responseHeaders["access-control-expose-headers"] = exposeHeaders;
        return undefined;
      },
      forOperation: () => undefined,
    };
  },
});
