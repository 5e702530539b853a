// A fixed number of `GET <path>` requests with a key, four at a time on keep-alive connections,
// for scripts/bench/count.sh: a count, not a rate, so that what is measured per request does not
// depend on how fast the machine is. Exits 1 if any answer is not 200.
// With an original URI, each request is nginx's auth_request call about `GET <original>` (the
// headers the generated config sets, src/decision/nginx-config.ts) and <path> is the door.
import http from "node:http";

const [port, key, count, path = "/v1/pets", original] = process.argv.slice(2);
const headers: http.OutgoingHttpHeaders = { authorization: `Bearer ${key}` };
if (original !== undefined) {
  headers["x-original-method"] = "GET";
  headers["x-original-uri"] = original;
  headers["x-forwarded-for"] = "127.0.0.1";
}
const total = Number(count);
const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
let failed = 0;
let started = 0;

function once(): Promise<void> {
  return new Promise((done) => {
    const req = http.get({ host: "127.0.0.1", port: Number(port), path, agent, headers }, (res) => {
      if (res.statusCode !== 200) failed++;
      res.resume();
      res.on("end", done);
    });
    req.on("error", () => {
      failed++;
      done();
    });
  });
}

async function client(): Promise<void> {
  while (started++ < total) await once();
}

await Promise.all([client(), client(), client(), client()]);
agent.destroy();
if (failed > 0) {
  console.error(`count-load: ${failed} of ${total} answers were not 200`);
  process.exitCode = 1;
}
