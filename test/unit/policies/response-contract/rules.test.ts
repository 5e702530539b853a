// The interface's rules beyond the schema, each called on an answer as the policy parsed it.
import assert from "node:assert/strict";
import { test } from "node:test";
import { checkRule } from "../../../../policies/response-contract/rules.ts";
import type { Exchange } from "../../../../src/policy.ts";

function exchangeWith(parts: {
  path?: Record<string, string>;
  query?: Record<string, string>;
  body?: string;
}) {
  return {
    pathParams: parts.path ?? {},
    query: new Map(Object.entries(parts.query ?? {})),
    body: parts.body === undefined ? undefined : Buffer.from(parts.body),
    redact: (text: string) => text,
  } as unknown as Exchange;
}
const judged = (rule: Parameters<typeof checkRule>[0], exchange: Exchange, text: string) =>
  checkRule(rule, exchange, JSON.parse(text), text);

test("page-size: no more items than the limit asked for, or than the default when none was", () => {
  const rule = { rule: "page-size", parameter: "limit", fallback: 20 } as const;
  const items = (n: number) => JSON.stringify(Array.from({ length: n }, (_, id) => ({ id })));
  assert.equal(judged(rule, exchangeWith({ query: { limit: "5" } }), items(5)), undefined);
  assert.equal(
    judged(rule, exchangeWith({ query: { limit: "5" } }), items(6))?.message,
    "the page holds 6 items, more than limit=5",
  );
  assert.equal(judged(rule, exchangeWith({}), items(21))?.pointer, "/20");
});

test("filter: every item has the status the filter asked for; no filter, no check", () => {
  const rule = { rule: "filter", parameter: "status", field: "status", token: "status" } as const;
  const page = '[{"status":"sold"},{"status":"available"}]';
  assert.equal(judged(rule, exchangeWith({}), page), undefined);
  const violation = judged(rule, exchangeWith({ query: { status: "sold" } }), page);
  assert.equal(violation?.pointer, "/1/status");
  assert.equal(violation?.excerpt, '"available"');
});

test("identity: the answer's id is the petId asked for, exactly, beyond 2^53 too", () => {
  const rule = { rule: "identity", parameter: "petId", field: "id", token: "id" } as const;
  assert.equal(judged(rule, exchangeWith({ path: { petId: "7" } }), '{"id":7}'), undefined);
  assert.equal(
    judged(rule, exchangeWith({ path: { petId: "9007199254740993" } }), '{"id":9007199254740993}'),
    undefined,
  );
  // Equal as doubles, not as the integers written.
  const near = judged(rule, exchangeWith({ path: { petId: "9007199254740993" } }), '{"id":9007199254740992}');
  assert.equal(near?.excerpt, "9007199254740992");
});

test("echo: a created resource has the fields the request sent, int64 exactly", () => {
  const rule = {
    rule: "echo",
    fields: [
      { name: "name", token: "name" },
      { name: "categoryId", token: "categoryId" },
    ],
  } as const;
  const sent = '{"name":"Rex","categoryId":9007199254740993}';
  assert.equal(
    judged(rule, exchangeWith({ body: sent }), '{"id":1,"name":"Rex","categoryId":9007199254740993}'),
    undefined,
  );
  const rounded = judged(
    rule,
    exchangeWith({ body: sent }),
    '{"id":1,"name":"Rex","categoryId":9007199254740992}',
  );
  assert.equal(rounded?.pointer, "/categoryId");
  assert.equal(
    judged(rule, exchangeWith({ body: sent }), '{"id":1,"name":"Max","categoryId":9007199254740993}')
      ?.pointer,
    "/name",
  );
});
