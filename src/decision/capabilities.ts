// What each proxy in front of decision mode can carry of a decision, said once: the doors read
// whether a proxy sends the body, `npm run plan` says per operation what each proxy gives up, and
// the plugin-mode matrix states its cells from the same facts and holds them to the real proxies
// (test/slow/plugin-mode-matrix.test.ts: a cell stated but the same as proxy mode fails it, as
// does one that differs unstated).

export interface ProxyCapabilities {
  /** As people write it: "nginx", "HAProxy". */
  readonly title: string;
  /** How it asks the gateway, as its docs name it: "auth_request", "forwardAuth". */
  readonly asks: string;
  /** Its call carries the request body (Envoy's with_request_body, Traefik's forwardBody): the body phases run. */
  readonly sendsBody: boolean;
  /** It forwards to the target the decision names: a query a policy set (a clamped limit) reaches the backend. */
  readonly takesTarget: boolean;
  /** It adds the decision's answer headers (Deprecation, X-Limit-Applied, CORS, X-Request-Id) to the client's answer. */
  readonly addsAnswerHeaders: boolean;
}

export const PROXY_CAPABILITIES = {
  nginx: {
    title: "nginx",
    asks: "auth_request",
    sendsBody: false,
    takesTarget: true,
    addsAnswerHeaders: true,
  },
  envoy: { title: "Envoy", asks: "ext_authz", sendsBody: true, takesTarget: true, addsAnswerHeaders: true },
  caddy: {
    title: "Caddy",
    asks: "forward_auth",
    sendsBody: false,
    takesTarget: true,
    addsAnswerHeaders: true,
  },
  traefik: {
    title: "Traefik",
    asks: "forwardAuth",
    sendsBody: true,
    takesTarget: false,
    addsAnswerHeaders: false,
  },
  haproxy: {
    title: "HAProxy",
    asks: "Lua auth-request",
    sendsBody: false,
    takesTarget: true,
    addsAnswerHeaders: true,
  },
} as const satisfies Readonly<Record<string, ProxyCapabilities>>;

export type ProxyName = keyof typeof PROXY_CAPABILITIES;

/** Every proxy with a door, in the order the docs list them. */
export const PROXY_NAMES = Object.keys(PROXY_CAPABILITIES) as ProxyName[];

/** Why, in the words the plan and the capability table both use. */
export const because = {
  noBody: (proxy: ProxyCapabilities) => `${proxy.title}'s ${proxy.asks} sends the decision no body`,
  noTarget: (proxy: ProxyCapabilities) => `${proxy.title}'s ${proxy.asks} cannot rewrite the target`,
  noAnswerHeaders: (proxy: ProxyCapabilities) =>
    `${proxy.title}'s ${proxy.asks} cannot add the answer's headers to the client's answer`,
};
