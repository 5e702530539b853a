// The Error object a generated config writes itself (a backend fault) reaches the client as the
// JSON the catalogue holds, whatever its text: a `$`, quotes, backslashes, braces or a backtick in
// a message would otherwise start a variable or a placeholder, or end the string, in Debian's nginx,
// Caddy and HAProxy. Each runs the escaped text as the generators write it.
import assert from "node:assert/strict";
import { test } from "node:test";
import { caddyLiteral } from "../../src/decision/caddy-config.ts";
import { haproxyLiteral } from "../../src/decision/haproxy-config.ts";
import { nginxLiteral } from "../../src/decision/nginx-config.ts";
import { caddySkipReason, startCaddy } from "../support/caddy.ts";
import { haproxySkipReason, startHaproxy } from "../support/haproxy.ts";
import { request } from "../support/http.ts";
import { freePort, nginxSkipReason, startNginx } from "../support/nginx.ts";

const HOSTILE = JSON.stringify({
  code: "UPSTREAM_UNAVAILABLE",
  // biome-ignore lint/suspicious/noTemplateCurlyInString: the very text a config must not expand
  message: "a $b ${c} $ \"q\" 's' '' \\ \\{path} {path} {$HOME} %[src] %% `t` ; # \n\t }",
  status: 502,
});

test("nginx returns an escaped Error body byte for byte as JSON, never expanding it", {
  skip: nginxSkipReason(),
}, async () => {
  const port = await freePort();
  const nginx = await startNginx(
    `events {}\nhttp {\n  server {\n    listen ${port};\n    location / {\n      types { }\n      default_type application/json;\n      return 502 ${nginxLiteral(HOSTILE)};\n    }\n  }\n}\n`,
    port,
  );
  try {
    // An extension nginx's default types would map to text/html.
    const answer = await request(`${nginx.origin}/v1/pets.html`);
    assert.equal(answer.status, 502);
    assert.equal(answer.headers["content-type"], "application/json");
    assert.deepEqual(answer.json(), JSON.parse(HOSTILE));
  } finally {
    await nginx.stop();
  }
});

test("Caddy responds with an escaped Error body as JSON, never expanding it", {
  skip: caddySkipReason(),
}, async () => {
  const port = await freePort();
  const caddy = await startCaddy(
    `http://:${port} {\n\theader Content-Type application/json\n\trespond ${caddyLiteral(HOSTILE)} 502\n}\n`,
    port,
  );
  try {
    const answer = await request(`${caddy.origin}/v1/pets`);
    assert.equal(answer.status, 502);
    assert.deepEqual(answer.json(), JSON.parse(HOSTILE));
  } finally {
    await caddy.stop();
  }
});

test("HAProxy answers its own error with an escaped Error body as JSON, never expanding it", {
  skip: haproxySkipReason(),
}, async () => {
  const port = await freePort();
  // As the generated config does: an http-error of the backend, here one whose server is down.
  const haproxy = await startHaproxy(
    [
      "defaults",
      "  mode http",
      "  timeout client 5s",
      "  timeout connect 1s",
      "  timeout server 5s",
      "frontend test",
      `  bind :${port}`,
      "  default_backend down",
      "backend down",
      "  retries 0",
      `  http-error status 503 content-type application/json string ${haproxyLiteral(HOSTILE)}`,
      `  server down 127.0.0.1:${await freePort()}`,
      "",
    ].join("\n"),
    port,
  );
  try {
    const answer = await request(`${haproxy.origin}/v1/pets`);
    assert.equal(answer.status, 503);
    assert.equal(answer.headers["content-type"], "application/json");
    assert.deepEqual(answer.json(), JSON.parse(HOSTILE));
  } finally {
    await haproxy.stop();
  }
});
