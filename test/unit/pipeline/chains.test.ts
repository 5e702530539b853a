// Each operation's phase chains and the runners that call them (catching what a phase throws),
// with fake policies and a fake exchange: no server, no request.
import assert from "node:assert/strict";
import type { OutgoingHttpHeaders } from "node:http";
import { test } from "node:test";
import { gatewayError } from "../../../src/errors.ts";
import type { Operation } from "../../../src/openapi.ts";
import {
  buildArrival,
  buildChains,
  isCredential,
  type NamedPolicy,
  runArrival,
  runReply,
  runRequest,
  runRequestBody,
  runResponse,
} from "../../../src/pipeline/chains.ts";
import type { CoreExchange } from "../../../src/pipeline/exchange.ts";
import type { OperationPolicy, UpstreamAnswer } from "../../../src/policy.ts";

const listPets = { id: "listPets", uncheckedParameters: [] } as unknown as Operation;
const getPet = { id: "getPet", uncheckedParameters: [] } as unknown as Operation;
const exchange = { notes: {} } as unknown as CoreExchange;
const answer: UpstreamAnswer = {
  status: 200,
  headers: {},
  body: undefined,
  oversized: false,
  fault: undefined,
};

/** A policy whose every phase records its name in `ran`, for the operations it applies to. */
function recording(name: string, ran: string[], only?: Operation) {
  return {
    name,
    instance: {
      forOperation: (operation: Operation): OperationPolicy | undefined =>
        only !== undefined && operation !== only
          ? undefined
          : {
              onRequest: () => void ran.push(`${name} request`),
              onRequestBody: () => void ran.push(`${name} body`),
              onResponse: () => void ran.push(`${name} response`),
              onReply: () => void ran.push(`${name} reply`),
            },
    },
  } satisfies NamedPolicy;
}

const neverFails = () => assert.fail("no phase should fail");

test("request phases run in the policies' order, response and reply phases in reverse", () => {
  const ran: string[] = [];
  const policies = [recording("auth", ran), recording("contract", ran), recording("cors", ran)];
  const chain = buildChains([listPets], policies, neverFails).get(listPets);
  assert.ok(chain);
  runRequest(chain, exchange);
  runRequestBody(chain, exchange);
  runResponse(chain, exchange, answer);
  runReply(chain, exchange, 200, {});
  assert.deepEqual(ran, [
    "auth request",
    "contract request",
    "cors request",
    "auth body",
    "contract body",
    "cors body",
    "cors response",
    "contract response",
    "auth response",
    "cors reply",
    "contract reply",
    "auth reply",
  ]);
});

test("a policy that does not apply to an operation has no phase in its chain", () => {
  const ran: string[] = [];
  const chains = buildChains([listPets, getPet], [recording("only-get", ran, getPet)], neverFails);
  assert.equal(chains.get(listPets)?.request.length, 0);
  assert.equal(chains.get(getPet)?.request.length, 1);
});

test("answers are buffered only for a policy that reads them in a response phase", () => {
  const reads = (phases: OperationPolicy) =>
    buildChains([listPets], [{ name: "p", instance: { forOperation: () => phases } }], neverFails).get(
      listPets,
    )?.readsResponseBody;
  assert.equal(reads({ onResponse: () => undefined }), false);
  assert.equal(reads({ readsResponseBody: true, onResponse: () => undefined }), true);
  assert.equal(reads({ readsResponseBody: true, onRequest: () => undefined }), false);
});

test("a policy that reads only some answers is asked per request; another that reads all holds every one", () => {
  const decided: boolean[] = [];
  const sampling: NamedPolicy = {
    name: "sampling",
    instance: {
      forOperation: () => ({
        readsResponseBody: () => {
          decided.push(decided.length % 2 === 0);
          return decided.at(-1) as boolean;
        },
        onResponse: () => undefined,
      }),
    },
  };
  const alone = buildChains([listPets], [sampling], neverFails).get(listPets);
  assert.equal(alone?.readsResponseBody, true);
  assert.deepEqual([alone?.holdsAnswer?.(exchange), alone?.holdsAnswer?.(exchange)], [true, false]);
  const reader: NamedPolicy = {
    name: "reader",
    instance: { forOperation: () => ({ readsResponseBody: true, onResponse: () => undefined }) },
  };
  assert.equal(buildChains([listPets], [sampling, reader], neverFails).get(listPets)?.holdsAnswer, undefined);
  const failures: unknown[] = [];
  const throwing: NamedPolicy = {
    name: "faulty",
    instance: {
      forOperation: () => ({
        readsResponseBody: () => {
          throw new Error("bug");
        },
        onResponse: () => undefined,
      }),
    },
  };
  const guarded = buildChains([listPets], [throwing], (...failure) => failures.push(failure)).get(listPets);
  assert.equal(guarded?.holdsAnswer?.(exchange), true, "one that throws holds the answer");
  assert.equal(failures.length, 1);
});

test("a judging phase that throws refuses its request with INTERNAL_ERROR, and is reported once", () => {
  const failures: unknown[][] = [];
  const boom = new Error("bug");
  const throwing: NamedPolicy = {
    name: "faulty",
    instance: {
      forOperation: () => ({
        onRequest() {
          throw boom;
        },
        onResponse() {
          throw boom;
        },
        onReply(_exchange, _status, headers) {
          headers["x-half"] = "written";
          throw boom;
        },
      }),
    },
  };
  const chain = buildChains([listPets], [throwing], (...failure) => void failures.push(failure)).get(
    listPets,
  );
  assert.ok(chain);
  const refused = runRequest(chain, exchange);
  assert.equal(refused?.code, "INTERNAL_ERROR");
  assert.equal(refused?.status, 500);
  assert.equal(runResponse(chain, exchange, answer)?.code, "INTERNAL_ERROR");
  // A reply phase has nothing to refuse: the answer goes out as it was when the phase threw.
  const headers: OutgoingHttpHeaders = {};
  runReply(chain, exchange, 200, headers);
  assert.deepEqual(headers, { "x-half": "written" });
  assert.deepEqual(failures, [
    ["faulty", "onRequest", exchange, boom],
    ["faulty", "onResponse", exchange, boom],
    ["faulty", "onReply", exchange, boom],
  ]);
});

test("a phase runs with its policy object as this, and a refusal it returns passes through", () => {
  const refusal = gatewayError("NOT_FOUND");
  const phases: OperationPolicy = {
    onRequest(this: { refusal: typeof refusal }) {
      return this.refusal;
    },
  };
  Object.assign(phases, { refusal });
  const chain = buildChains(
    [listPets],
    [{ name: "p", instance: { forOperation: () => phases } }],
    neverFails,
  );
  const built = chain.get(listPets);
  assert.ok(built);
  assert.equal(runRequest(built, exchange), refusal);
});

test("arrival phases run for every request; a credential check that throws counts as a credential", () => {
  const failures: string[] = [];
  const arrival = buildArrival(
    [
      { name: "cors", instance: { forOperation: () => undefined, onArrival: () => undefined } },
      {
        name: "keys",
        instance: {
          forOperation: () => undefined,
          onArrival() {
            throw new Error("bug");
          },
          recognizesCredential(value) {
            if (value === "boom") throw new Error("bug");
            return value === "k-1";
          },
        },
      },
    ],
    (policy, phase, failedExchange) =>
      void failures.push(`${policy} ${phase} ${failedExchange === undefined}`),
  );
  assert.equal(arrival.arrival.length, 2);
  assert.equal((runArrival(arrival, exchange) as { code?: string } | undefined)?.code, "INTERNAL_ERROR");
  assert.equal(isCredential(arrival, "k-1"), true);
  assert.equal(isCredential(arrival, "other"), false);
  // Not echoed when in doubt; and a string is not taken for the exchange.
  assert.equal(isCredential(arrival, "boom"), true);
  assert.deepEqual(failures, ["keys onArrival false", "keys recognizesCredential true"]);
});
