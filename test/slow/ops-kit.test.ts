// The operations kit under deploy/, held to what an operator relies on: the kustomize base renders
// with no cluster into objects valid against the Kubernetes schemas (kubernetes-models, offline)
// with every setting docs/operations/kubernetes.md promises; promtool checks the alert rules and
// their unit tests pass; every metric an alert or a dashboard panel names is one the gateway's
// code registers (a name from the registries, not from a list: a misspelled one fails); the rule
// tests' input series are series of a real scrape. Without kubectl (or one older than 1.21, whose
// kustomize is too old) or promtool, the tests that need them skip and say why.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import { Registry } from "prom-client";
import { parse, parseAllDocuments } from "yaml";
import policies from "../../policies/index.ts";
import { primaryMetrics } from "../../src/cluster/primary.ts";
import { validateConfig } from "../../src/config.ts";
import type { GatewayConfig } from "../../src/config-schema.ts";
import { createMetrics } from "../../src/metrics.ts";
import { isListedAttribute, OPERATION_ID, SERVER_SPAN_ATTRIBUTES } from "../../src/tracing/attributes.ts";
import { tracingSettings } from "../../src/tracing/settings.ts";
import { parsePrometheus } from "../support/metrics.ts";
import { findProgram } from "../support/processes.ts";
import { PROJECT_ROOT } from "../support/program.ts";

const at = (path: string) => join(PROJECT_ROOT, path);
const MiB = 1024 * 1024;

// ---- the tools, or why a test skips ----

function kubectlSkip(): string | false {
  const kubectl = findProgram("kubectl");
  if (!kubectl) return "kubectl not found: the render tests need kubectl 1.21 or newer (see CONTRIBUTING)";
  const run = spawnSync(kubectl, ["version", "--client", "-o", "json"], { encoding: "utf8" });
  const version = run.status === 0 ? (JSON.parse(run.stdout) as { clientVersion?: { minor?: string } }) : {};
  const minor = Number.parseInt(version.clientVersion?.minor ?? "0", 10);
  if (minor < 21) {
    return `kubectl 1.${minor}: its kustomize is too old for the base; the render tests need 1.21 or newer (see CONTRIBUTING)`;
  }
  return false;
}
const noKubectl = kubectlSkip();
const promtool = findProgram("promtool");
const noPromtool = promtool ? false : "promtool not found: apt-get install prometheus (see CONTRIBUTING)";

// ---- the metric names the gateway's code registers ----

/** Every series name the code can export: the core's, each policy's, the primary's, prom-client's defaults. */
function registeredNames(): Set<string> {
  const registry = createMetrics({ defaultMetrics: true, memoryLimitBytes: 1 }).registry;
  for (const policy of policies) policy.metrics?.(registry);
  const primary = new Registry();
  primaryMetrics(primary);
  const names = new Set<string>();
  for (const metric of [...registry.getMetricsAsArray(), ...primary.getMetricsAsArray()]) {
    const { name, type } = metric as unknown as { name: string; type: string };
    names.add(name);
    if (type === "histogram") for (const suffix of ["_bucket", "_sum", "_count"]) names.add(name + suffix);
    if (type === "summary") for (const suffix of ["_sum", "_count"]) names.add(name + suffix);
  }
  return names;
}
const REGISTERED = registeredNames();
/** Series the rules read that another exporter writes, and which. */
const EXTERNAL: Readonly<Record<string, string>> = {
  kube_pod_container_status_restarts_total: "kube-state-metrics",
};

const PROMQL_WORDS = new Set(["and", "or", "unless", "by", "without", "on", "ignoring", "bool", "offset"]);

/**
 * The metric names a PromQL expression reads: what is left once strings, label matchers, grouping
 * label lists, range durations, numbers, function names and keywords are taken out.
 */
export function metricNames(expr: string): string[] {
  const bare = expr
    .replaceAll(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'/g, '""')
    .replaceAll(/\{[^}]*\}/g, " ")
    .replaceAll(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, " ")
    .replaceAll(/\[[^\]]*\]/g, " ");
  const names: string[] = [];
  for (const match of bare.matchAll(/(?<![\w.])([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?/g)) {
    const [, name, call] = match;
    if (call !== undefined || PROMQL_WORDS.has(name as string)) continue;
    names.push(name as string);
  }
  return names;
}

function unknownNames(exprs: readonly string[]): string[] {
  return [...new Set(exprs.flatMap(metricNames))].filter(
    (name) => !REGISTERED.has(name) && EXTERNAL[name] === undefined,
  );
}

// ---- the Kubernetes base ----

interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  // biome-ignore lint/suspicious/noExplicitAny: rendered objects, checked against their schemas below
  spec?: any;
  data?: Record<string, string>;
}

function render(dir: string): K8sObject[] {
  const run = spawnSync("kubectl", ["kustomize", at(dir)], { encoding: "utf8" });
  assert.equal(run.status, 0, run.stderr);
  return parseAllDocuments(run.stdout).map((document) => document.toJSON() as K8sObject);
}

/** Validates an object with its kubernetes-models class (the Prometheus Operator's for its kinds). */
async function validate(object: K8sObject): Promise<void> {
  const models = object.apiVersion.startsWith("monitoring.coreos.com/")
    ? "@kubernetes-models/prometheus-operator"
    : "kubernetes-models";
  let model: { new (data: unknown): { validate(): void } };
  try {
    model = (await import(`${models}/${object.apiVersion}/${object.kind}`))[object.kind];
  } catch {
    assert.fail(`no schema for ${object.apiVersion} ${object.kind}: add its kubernetes-models package`);
  }
  // kustomize wraps a Secret's base64 at 76 columns; Kubernetes decodes it so (Go's base64 skips
  // line breaks), the schema's "byte" format does not.
  const data =
    object.kind === "Secret" && object.data
      ? Object.fromEntries(
          Object.entries(object.data).map(([name, value]) => [name, value.replaceAll(/\s/g, "")]),
        )
      : object.data;
  new model({ ...object, ...(data ? { data } : {}) }).validate();
}

const ofKind = (objects: readonly K8sObject[], kind: string, name?: string): K8sObject => {
  const found = objects.find(
    (object) => object.kind === kind && (name === undefined || object.metadata.name === name),
  );
  assert.ok(found, `a ${kind}${name ? ` ${name}` : ""}`);
  return found;
};
const matches = (selector: Record<string, string>, labels: Record<string, string>) =>
  Object.keys(selector).length > 0 && Object.entries(selector).every(([key, value]) => labels[key] === value);

describe("kubectl kustomize deploy/kubernetes", { skip: noKubectl }, () => {
  const objects = noKubectl ? [] : render("deploy/kubernetes");
  const deployment = () => ofKind(objects, "Deployment");
  const pod = () => deployment().spec.template;
  const container = () => pod().spec.containers[0];
  const env = (name: string) =>
    (container().env as { name: string; value: string }[]).find((entry) => entry.name === name)?.value;
  const configMap = () => ofKind(objects, "ConfigMap");
  /** The gateway config the pods run: the ConfigMap's file, with the schema's defaults. */
  const config = (): GatewayConfig =>
    validateConfig(JSON.parse(configMap().data?.["gateway.json"] ?? "{}"), policies);

  test("renders the base's objects, each valid against its Kubernetes (or Prometheus Operator) schema", async () => {
    assert.deepEqual(
      objects.map((object) => `${object.kind}/${object.metadata.name}`).sort(),
      [
        `ConfigMap/${configMap().metadata.name}`,
        "Deployment/petstore-gateway",
        "NetworkPolicy/petstore-gateway",
        "PodDisruptionBudget/petstore-gateway",
        "Secret/petstore-gateway-api-keys",
        "Service/petstore-gateway",
        "Service/petstore-gateway-ops",
        "ServiceMonitor/petstore-gateway",
      ].sort(),
    );
    for (const object of objects) await validate(object);
    // A schema check that passed anything would pass the base too.
    await assert.rejects(validate({ ...deployment(), spec: { ...deployment().spec, replicas: "two" } }));
  });

  test("the Deployment: 2 replicas, the image by a pinned tag, never :latest", () => {
    assert.equal(deployment().spec.replicas, 2);
    const image = String(container().image);
    assert.match(image, /^[\w./-]+:[\w.-]+$/, "an image with a tag");
    assert.doesNotMatch(image, /:latest$/);
  });

  test("the three probes ask the ops port: startup and liveness /healthz, readiness /readyz", () => {
    const ops = (container().ports as { name: string; containerPort: number }[]).find(
      (p) => p.name === "ops",
    );
    assert.equal(ops?.containerPort, config().opsPort);
    for (const [probe, path] of [
      ["startupProbe", "/healthz"],
      ["livenessProbe", "/healthz"],
      ["readinessProbe", "/readyz"],
    ] as const) {
      assert.deepEqual(container()[probe].httpGet, { path, port: "ops" }, probe);
    }
  });

  test("one drain, the gateway's, and a grace period of at least drain + shutdownTimeoutMs + 5 s", () => {
    const { shutdownDrainMs, shutdownTimeoutMs } = config().server;
    assert.equal(container().lifecycle?.preStop, undefined, "no preStop sleep on top of shutdownDrainMs");
    // Long enough for the endpoint's removal to reach kube-proxy and the ingress controllers.
    assert.ok(shutdownDrainMs >= 10_000, `shutdownDrainMs ${shutdownDrainMs}`);
    const grace = pod().spec.terminationGracePeriodSeconds as number;
    assert.ok(
      grace * 1000 >= shutdownDrainMs + shutdownTimeoutMs + 5000,
      `terminationGracePeriodSeconds ${grace} against ${shutdownDrainMs} + ${shutdownTimeoutMs} ms + 5 s`,
    );
    // Out of the endpoints well within the drain: readiness sees the 503 in one period.
    const readiness = container().readinessProbe;
    assert.ok(readiness.periodSeconds * readiness.failureThreshold * 1000 < shutdownDrainMs);
  });

  test("the memory limit is (peak RSS + maxBufferedBytes) x 1.25, from the figures the manifest states", () => {
    const source = readFileSync(at("deploy/kubernetes/base/deployment.yaml"), "utf8");
    const peak = Number(/peak RSS (\d+) MiB/.exec(source)?.[1]);
    assert.ok(peak > 0, "the manifest states the peak RSS it used");
    // Not below the latest soak's peak, which it cites.
    const soakFile = /bench\/results\/(soak-hostile-[\w-]+\.md)/.exec(source)?.[1] as string;
    const soak = readFileSync(at(`bench/results/${soakFile}`), "utf8");
    const soakPeak = Number(/(\d+) MB at peak/.exec(soak)?.[1]);
    assert.ok(soakPeak > 0 && peak >= soakPeak, `peak ${peak} MiB against the soak's ${soakPeak}`);
    const expected = Math.ceil((peak + config().server.maxBufferedBytes / MiB) * 1.25);
    assert.equal(container().resources.limits.memory, `${expected}Mi`);
    assert.ok(container().resources.requests.cpu && container().resources.requests.memory, "requests");
  });

  test("the security context: non-root, read-only root, no privilege escalation, no capabilities, seccomp RuntimeDefault", () => {
    const podContext = pod().spec.securityContext;
    assert.equal(podContext.runAsNonRoot, true);
    assert.deepEqual(podContext.seccompProfile, { type: "RuntimeDefault" });
    const context = container().securityContext;
    assert.equal(context.runAsNonRoot, true);
    assert.equal(context.readOnlyRootFilesystem, true);
    assert.equal(context.allowPrivilegeEscalation, false);
    assert.deepEqual(context.capabilities.drop, ["ALL"]);
    assert.equal(context.capabilities.add, undefined);
    assert.deepEqual(context.seccompProfile, { type: "RuntimeDefault" });
  });

  test("the key file is a Secret mounted as a directory, holding the example file; the config a ConfigMap", () => {
    const secret = ofKind(objects, "Secret");
    const example = readFileSync(at("config/api-keys.example.json"), "utf8");
    assert.equal(Buffer.from(secret.data?.["api-keys.json"] ?? "", "base64").toString("utf8"), example);
    assert.equal(readFileSync(at("deploy/kubernetes/base/api-keys.example.json"), "utf8"), example);
    const volumes = pod().spec.volumes as {
      name: string;
      secret?: { secretName: string };
      configMap?: { name: string };
    }[];
    const mounts = container().volumeMounts as { name: string; mountPath: string; subPath?: string }[];
    const mountOf = (volume: string | undefined) => mounts.find((mount) => mount.name === volume);
    const keys = mountOf(volumes.find((volume) => volume.secret?.secretName === secret.metadata.name)?.name);
    assert.ok(keys, "the Secret is mounted");
    assert.equal(keys.subPath, undefined, "a directory: a subPath mount never sees the Secret's updates");
    assert.equal(env("API_KEYS_FILE"), `${keys.mountPath}/api-keys.json`);
    const configMount = mountOf(
      volumes.find((volume) => volume.configMap?.name === configMap().metadata.name)?.name,
    );
    assert.ok(configMount, "the ConfigMap is mounted");
    assert.equal(env("GATEWAY_CONFIG"), `${configMount.mountPath}/gateway.json`);
    assert.equal(env("ENVIRONMENT"), "production");
    assert.ok(env("UPSTREAM_URL"));
  });

  test("the ops token: a Secret the pods mount as a directory and the ServiceMonitor sends, never held in the base", () => {
    const name = "petstore-gateway-ops-token";
    assert.ok(
      !objects.some((object) => object.kind === "Secret" && object.metadata.name === name),
      "no token is committed: the Secret is made in the cluster",
    );
    const volume = (pod().spec.volumes as { name: string; secret?: { secretName: string } }[]).find(
      (entry) => entry.secret?.secretName === name,
    );
    assert.ok(volume, "the token's Secret is a volume");
    const mount = (container().volumeMounts as { name: string; mountPath: string; subPath?: string }[]).find(
      (entry) => entry.name === volume.name,
    );
    assert.ok(mount, "the token's Secret is mounted");
    assert.equal(mount.subPath, undefined, "a directory: a subPath mount never sees a rotated token");
    assert.equal(env("OPS_TOKEN_FILE"), `${mount.mountPath}/token`);
    // /metrics stays behind the token; the probes are open whatever the config says.
    assert.equal(config().opsMetricsOpen, false);
    const monitor = ofKind(objects, "ServiceMonitor");
    assert.deepEqual(
      monitor.spec.endpoints.map((endpoint: { bearerTokenSecret?: unknown }) => endpoint.bearerTokenSecret),
      [{ name, key: "token" }],
    );
  });

  test("the public and the ops ports have Services of their own, selecting the gateway's pods", () => {
    const labels = pod().metadata.labels as Record<string, string>;
    const publicService = ofKind(objects, "Service", "petstore-gateway");
    const opsService = ofKind(objects, "Service", "petstore-gateway-ops");
    assert.deepEqual(
      publicService.spec.ports.map((port: { targetPort: string }) => port.targetPort),
      ["http"],
    );
    assert.deepEqual(
      opsService.spec.ports.map((port: { targetPort: string }) => port.targetPort),
      ["ops"],
    );
    for (const service of [publicService, opsService]) assert.ok(matches(service.spec.selector, labels));
    assert.ok(matches(deployment().spec.selector.matchLabels, labels));
  });

  test("a PodDisruptionBudget keeps one replica serving through a node drain", () => {
    const budget = ofKind(objects, "PodDisruptionBudget");
    assert.ok(matches(budget.spec.selector.matchLabels, pod().metadata.labels));
    assert.ok(budget.spec.maxUnavailable < deployment().spec.replicas);
  });

  test("the NetworkPolicy lets only the scraper's namespace reach the ops port", () => {
    const policy = ofKind(objects, "NetworkPolicy");
    assert.ok(matches(policy.spec.podSelector.matchLabels, pod().metadata.labels));
    assert.deepEqual(policy.spec.policyTypes, ["Ingress"]);
    const rules = policy.spec.ingress as { from?: unknown[]; ports: { port: string }[] }[];
    const opsRules = rules.filter((rule) => rule.ports.some((port) => port.port === "ops"));
    assert.equal(opsRules.length, 1);
    assert.deepEqual(opsRules[0]?.from, [
      { namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "monitoring" } } },
    ]);
    assert.ok(
      rules.some((rule) => rule.from === undefined && rule.ports.some((port) => port.port === "http")),
    );
  });

  test("scraped both ways: a ServiceMonitor on the ops Service, and the prometheus.io annotations", () => {
    const monitor = ofKind(objects, "ServiceMonitor");
    const opsService = ofKind(objects, "Service", "petstore-gateway-ops");
    assert.ok(matches(monitor.spec.selector.matchLabels, opsService.metadata.labels ?? {}));
    assert.ok(
      !matches(
        monitor.spec.selector.matchLabels,
        ofKind(objects, "Service", "petstore-gateway").metadata.labels ?? {},
      ),
    );
    assert.deepEqual(
      monitor.spec.endpoints.map((e: { port: string; path: string }) => [e.port, e.path]),
      [["ops", "/metrics"]],
    );
    assert.deepEqual(pod().metadata.annotations, {
      "prometheus.io/scrape": "true",
      "prometheus.io/port": String(config().opsPort),
      "prometheus.io/path": "/metrics",
    });
  });

  test("the staging overlay: its namespace, ENVIRONMENT and upstream, the image by a tag", async () => {
    const staging = render("deploy/kubernetes/overlays/staging");
    for (const object of staging) {
      await validate(object);
      assert.equal(object.metadata.namespace, "petstore-staging");
    }
    const gateway = ofKind(staging, "Deployment").spec.template.spec.containers[0];
    const value = (name: string) => gateway.env.find((entry: { name: string }) => entry.name === name)?.value;
    assert.equal(value("ENVIRONMENT"), "staging");
    assert.match(value("UPSTREAM_URL"), /staging/);
    assert.equal(value("API_KEYS_FILE"), env("API_KEYS_FILE"), "the base's other settings are kept");
    assert.doesNotMatch(gateway.image, /:latest$|^[^:]+$/);
  });

  test("the tracing component: staging's pods export to a collector, as the gateway reads its variables", () => {
    const base = ofKind(render("deploy/kubernetes"), "Deployment").spec.template.spec.containers[0];
    assert.ok(
      !base.env.some((entry: { name: string }) => entry.name.startsWith("OTEL_")),
      "the base exports nothing: tracing is an overlay's choice",
    );
    const staging = render("deploy/kubernetes/overlays/staging");
    const env: { name: string; value?: string; valueFrom?: Record<string, Record<string, unknown>> }[] =
      ofKind(staging, "Deployment").spec.template.spec.containers[0].env;
    // What the kubelet hands the process: each $(VAR) of an earlier entry expanded, the downward
    // API's fields as a pod would have them; the optional Secret's headers left out.
    const resolved: Record<string, string> = {};
    for (const [index, entry] of env.entries()) {
      const field = entry.valueFrom?.fieldRef?.fieldPath;
      if (field !== undefined) resolved[entry.name] = `pod-${String(field).replace(/\W/g, "-")}`;
      if (entry.value === undefined) continue;
      resolved[entry.name] = entry.value.replaceAll(/\$\((\w+)\)/g, (_, name: string) => {
        const earlier = env.findIndex((other) => other.name === name);
        assert.ok(earlier !== -1 && earlier < index, `${entry.name} names $(${name}), not set above it`);
        return resolved[name] as string;
      });
    }
    const settings = tracingSettings(resolved);
    assert.ok(settings, "tracing is on");
    assert.equal(settings.url, "http://otel-collector.observability.svc:4318/v1/traces");
    assert.equal(settings.protocol, "http/protobuf");
    assert.deepEqual(settings.sampler, { kind: "parentbased", root: { kind: "traceidratio", ratio: 0.1 } });
    assert.deepEqual(Object.keys(settings.resourceAttributes).sort(), [
      "k8s.namespace.name",
      "k8s.node.name",
      "k8s.pod.name",
    ]);
    assert.equal(settings.resourceAttributes["k8s.pod.name"], "pod-metadata-name");
    // The collector's credentials: from a Secret made in the cluster, which the pods do not wait for.
    const headers = env.find((entry) => entry.name === "OTEL_EXPORTER_OTLP_HEADERS");
    assert.deepEqual(headers?.valueFrom?.secretKeyRef, {
      name: "petstore-gateway-otlp",
      key: "headers",
      optional: true,
    });
    assert.ok(
      !staging.some((object) => object.metadata.name === "petstore-gateway-otlp"),
      "no Secret in git",
    );
  });

  test("the own-document overlay: every file of the document in one ConfigMap, mounted as a directory, OPENAPI_FILE in it", async () => {
    const dir = "deploy/kubernetes/overlays/own-document";
    const own = render(dir);
    for (const object of own) await validate(object);
    const documentMap = own.find(
      (object) => object.kind === "ConfigMap" && object.metadata.name.startsWith("petstore-gateway-openapi-"),
    );
    assert.ok(documentMap, "a ConfigMap of the document, its name hashed so a change rolls the pods");
    for (const file of ["openapi.yaml", "schemas.yaml"]) {
      assert.equal(documentMap.data?.[file], readFileSync(at(`${dir}/${file}`), "utf8"), file);
    }
    const spec = ofKind(own, "Deployment").spec.template.spec;
    const gateway = spec.containers[0];
    const volume = spec.volumes.find(
      (entry: { configMap?: { name: string } }) => entry.configMap?.name === documentMap.metadata.name,
    );
    assert.ok(volume, "a volume of the document's ConfigMap");
    const mount = gateway.volumeMounts.find((entry: { name: string }) => entry.name === volume.name);
    assert.equal(mount.subPath, undefined, "a directory: a subPath mount never sees the ConfigMap change");
    const file = gateway.env.find((entry: { name: string }) => entry.name === "OPENAPI_FILE")?.value;
    assert.equal(file, `${mount.mountPath}/openapi.yaml`);
    const value = (name: string) => gateway.env.find((entry: { name: string }) => entry.name === name)?.value;
    assert.equal(value("API_KEYS_FILE"), env("API_KEYS_FILE"), "the base's other settings are kept");
  });

  test("the decision overlay: decision mode, no upstream, the decision port open to the proxy's pods only, the ops port to the scraper", async () => {
    const dir = "deploy/kubernetes/overlays/decision";
    const decision = render(dir);
    for (const object of decision) await validate(object);
    // The base's config, with decision mode and the proxies whose X-Forwarded-For it believes.
    const base = JSON.parse(readFileSync(at("deploy/kubernetes/base/gateway.json"), "utf8"));
    const configMap = ofKind(decision, "ConfigMap");
    const given = JSON.parse(configMap.data?.["gateway.json"] ?? "{}");
    assert.deepEqual(given, {
      ...base,
      mode: "decision",
      server: { ...base.server, trustedProxies: given.server?.trustedProxies },
    });
    const decisionConfig = validateConfig(given, policies);
    assert.equal(decisionConfig.mode, "decision");
    assert.ok(decisionConfig.server.trustedProxies.length > 0, "the proxy's pods are trusted proxies");
    const spec = ofKind(decision, "Deployment").spec.template.spec;
    const gateway = spec.containers[0];
    const names = gateway.env.map((entry: { name: string }) => entry.name);
    assert.ok(!names.includes("UPSTREAM_URL"), "no backend: the proxy forwards");
    assert.ok(names.includes("API_KEYS_FILE"), "the base's other settings are kept");
    assert.ok(
      spec.volumes.some(
        (volume: { configMap?: { name: string } }) => volume.configMap?.name === configMap.metadata.name,
      ),
      "the pods mount the decision config",
    );
    // The decision port is the public port: the container port named http, the config's port.
    const http = gateway.ports.find((port: { name: string }) => port.name === "http");
    assert.equal(http.containerPort, decisionConfig.port);

    const policy = ofKind(decision, "NetworkPolicy");
    assert.ok(
      matches(
        policy.spec.podSelector.matchLabels,
        ofKind(decision, "Deployment").spec.template.metadata.labels,
      ),
    );
    assert.deepEqual(policy.spec.policyTypes, ["Ingress"]);
    const rules = policy.spec.ingress as { from?: unknown[]; ports: { port: string }[] }[];
    assert.deepEqual(
      rules.filter((rule) => rule.from === undefined || rule.from.length === 0),
      [],
      "no port is open to every peer",
    );
    const decisionRules = rules.filter((rule) => rule.ports.some((port) => port.port === "http"));
    assert.deepEqual(
      decisionRules.map((rule) => rule.from),
      [[{ podSelector: { matchLabels: { "petstore-gateway/decision-client": "true" } } }]],
    );
    const baseRules = ofKind(objects, "NetworkPolicy").spec.ingress as { ports: { port: string }[] }[];
    const opsOf = (of: typeof baseRules) =>
      of.filter((rule) => rule.ports.some((port) => port.port === "ops"));
    assert.deepEqual(opsOf(rules), opsOf(baseRules), "the ops port as in the base: the scraper's namespace");
  });
});

// ---- the alert rules ----

interface AlertRule {
  alert: string;
  expr: string;
  annotations: Record<string, string>;
}
const rules = (
  parse(readFileSync(at("deploy/prometheus/alerts.yml"), "utf8")) as {
    groups: { rules: AlertRule[] }[];
  }
).groups.flatMap((group) => group.rules);
const ruleTests = parse(readFileSync(at("deploy/prometheus/tests/alerts.test.yml"), "utf8")) as {
  tests: {
    name: string;
    input_series: { series: string }[];
    alert_rule_test: { alertname: string; exp_alerts: unknown[] }[];
  }[];
};

describe("deploy/prometheus/alerts.yml", () => {
  test("promtool check rules accepts it", { skip: noPromtool }, () => {
    const run = spawnSync(promtool as string, ["check", "rules", at("deploy/prometheus/alerts.yml")], {
      encoding: "utf8",
    });
    assert.equal(run.status, 0, run.stdout + run.stderr);
    assert.match(run.stdout, new RegExp(`SUCCESS: ${rules.length} rules found`));
  });

  test("promtool test rules: each alert fires, and stays quiet, when it should", {
    skip: noPromtool,
  }, (t) => {
    const run = spawnSync(
      promtool as string,
      ["test", "rules", at("deploy/prometheus/tests/alerts.test.yml")],
      {
        encoding: "utf8",
      },
    );
    assert.equal(run.status, 0, run.stdout + run.stderr);
    t.diagnostic(run.stdout.trim());
  });

  test("every alert is tested firing and quiet, and has a summary, a description and a runbook section", () => {
    const alertsPage = readFileSync(at("docs/operations/alerts.md"), "utf8");
    assert.equal(rules.length, 9, "the alerts of docs/operations/alerts.md");
    for (const rule of rules) {
      const checks = ruleTests.tests
        .flatMap((test) => test.alert_rule_test)
        .filter((c) => c.alertname === rule.alert);
      assert.ok(
        checks.some((c) => c.exp_alerts.length > 0),
        `${rule.alert} is tested firing`,
      );
      assert.ok(
        checks.some((c) => c.exp_alerts.length === 0),
        `${rule.alert} is tested quiet`,
      );
      assert.ok(
        rule.annotations.summary && rule.annotations.description,
        `${rule.alert} summary and description`,
      );
      assert.equal(rule.annotations.runbook, `docs/operations/alerts.md#${rule.alert.toLowerCase()}`);
      assert.match(alertsPage, new RegExp(`^## ${rule.alert}$`, "m"), `a runbook section for ${rule.alert}`);
    }
  });

  test("every metric an alert reads is one the gateway registers (or kube-state-metrics')", () => {
    assert.deepEqual(unknownNames(rules.map((rule) => rule.expr)), []);
  });

  test("a misspelled metric name is caught, where a parse-only check would pass it", () => {
    assert.deepEqual(
      unknownNames([
        'sum by (operation) (rate(http_server_request_duration_second_count{operation=~"x"}[5m])) > bool 0',
      ]),
      ["http_server_request_duration_second_count"],
    );
  });
});

describe("the rule tests' input series come from a real scrape", () => {
  const scrapeText = readFileSync(at("deploy/prometheus/tests/gateway-scrape.prom"), "utf8");
  const scraped = parsePrometheus(scrapeText);
  const key = (name: string, labels: Record<string, string>) =>
    `${name}{${Object.entries(labels)
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
      .join(",")}}`;

  test("the committed scrape parses, and every metric in it is one the gateway registers today", () => {
    assert.ok(scraped.length > 100, "a whole scrape");
    assert.deepEqual(
      [...new Set(scraped.map((s) => s.name))].filter((name) => !REGISTERED.has(name)),
      [],
      "regenerate it: node test/fixtures/gateway-scrape.ts",
    );
  });

  test("the scrape went through two workers' merge, and what is one figure per group stayed one", () => {
    const value = (name: string) => scraped.find((sample) => sample.name === name)?.value;
    assert.equal(value("gateway_workers"), 2);
    assert.equal(value("gateway_build_info"), 1);
    const document = JSON.parse(readFileSync(at("config/openapi.json"), "utf8"));
    const sunset = document.paths["/pets/{petId}"].get["x-gateway-deprecation"].sunset as string;
    assert.equal(value("gateway_deprecation_sunset_timestamp_seconds"), Date.parse(sunset) / 1000);
  });

  test("every input series of the rule tests, less the job and instance Prometheus adds, is a series of the scrape", () => {
    const series = new Set(scraped.map((sample) => key(sample.name, sample.labels)));
    const inputs = ruleTests.tests.flatMap((test) => test.input_series);
    assert.ok(inputs.length > 0, "the rule tests have input series");
    for (const input of inputs) {
      const [sample] = parsePrometheus(`${input.series} 0`);
      assert.ok(sample, input.series);
      if (EXTERNAL[sample.name] !== undefined) continue;
      const { job: _job, instance: _instance, ...labels } = sample.labels;
      assert.ok(series.has(key(sample.name, labels)), `${key(sample.name, labels)} is not in the scrape`);
    }
  });
});

// ---- the dashboard ----

describe("deploy/grafana/petstore-gateway.json", () => {
  interface Panel {
    title: string;
    type: string;
    targets?: { expr: string; exemplar?: boolean }[];
    panels?: Panel[];
    fieldConfig?: { defaults: { links?: { title: string; url: string }[] } };
  }
  const dashboard = JSON.parse(readFileSync(at("deploy/grafana/petstore-gateway.json"), "utf8")) as {
    panels: Panel[];
    templating: { list: { name: string; type: string; query?: { query: string } | string }[] };
  };
  const panels = dashboard.panels.flatMap((panel) => [panel, ...(panel.panels ?? [])]);
  const queries = panels.flatMap((panel) =>
    (panel.targets ?? []).map((target) => ({ panel: panel.title, expr: target.expr })),
  );
  /** Grafana's variables replaced as promtool can read them: the rate interval 5m, any other variable .* */
  const concrete = (expr: string) =>
    expr
      .replaceAll(/\$__rate_interval|\$\{__rate_interval\}/g, "5m")
      .replaceAll(/\$\{\w+(?::\w+)?\}|\$\w+|\[\[\w+\]\]/g, ".*");

  test("every panel has a query, and every query names only metrics the gateway registers", () => {
    assert.ok(queries.length >= 15, `${queries.length} queries`);
    // A row only groups panels; every other panel shows a query.
    for (const panel of panels) {
      if (panel.type === "row") continue;
      assert.ok((panel.targets?.length ?? 0) > 0, `${panel.title} has a query`);
    }
    assert.deepEqual(unknownNames(queries.map((query) => concrete(query.expr))), []);
    // The variables' own queries too.
    const variableQueries = dashboard.templating.list
      .map((variable) => (typeof variable.query === "object" ? variable.query.query : undefined))
      .filter((query): query is string => query?.startsWith("label_values(") === true)
      .map((query) => concrete(/^label_values\((.*),\s*\w+\)$/.exec(query)?.[1] ?? ""));
    assert.deepEqual(unknownNames(variableQueries), []);
  });

  test("the request-latency panels show exemplars and link to the traces of their operation", () => {
    const latency = panels.filter((panel) =>
      (panel.targets ?? []).some((target) =>
        target.expr.includes("http_server_request_duration_seconds_bucket"),
      ),
    );
    assert.ok(latency.length >= 2, latency.map((panel) => panel.title).join(", "));
    const traces = dashboard.templating.list.find((variable) => variable.name === "traces");
    assert.deepEqual([traces?.type, traces?.query], ["datasource", "tempo"]);
    for (const panel of latency) {
      for (const target of panel.targets ?? []) assert.equal(target.exemplar, true, panel.title);
      const links = panel.fieldConfig?.defaults.links ?? [];
      assert.equal(links.length, 1, panel.title);
      const url = decodeURIComponent(links[0]?.url ?? "");
      const left = JSON.parse(url.slice(url.indexOf("left=") + "left=".length)) as {
        datasource: string;
        queries: { queryType: string; query: string }[];
      };
      // Grafana's variable, as the dashboard writes it.
      assert.equal(left.datasource, ["$", "{traces}"].join(""));
      // TraceQL on an attribute the gateway really sets on its server spans.
      const query = left.queries[0]?.query ?? "";
      assert.equal(left.queries[0]?.queryType, "traceql");
      const attribute = /span\.([\w.]+) = "\$\{__field\.labels\.operation:percentencode\}"/.exec(query)?.[1];
      assert.ok(attribute && isListedAttribute(attribute, SERVER_SPAN_ATTRIBUTES), query);
      assert.equal(attribute, OPERATION_ID);
    }
  });

  test("its queries, with the variables replaced, pass promtool check rules", { skip: noPromtool }, () => {
    const file = join(mkdtempSync(join(tmpdir(), "gw-dashboard-")), "dashboard-rules.yml");
    const recordingRules = queries.map((query, index) => ({
      record: `dashboard:query_${index}`,
      expr: concrete(query.expr),
      labels: { panel: query.panel },
    }));
    writeFileSync(file, JSON.stringify({ groups: [{ name: "dashboard", rules: recordingRules }] }));
    const run = spawnSync(promtool as string, ["check", "rules", file], { encoding: "utf8" });
    assert.equal(run.status, 0, run.stdout + run.stderr);
    assert.match(run.stdout, new RegExp(`SUCCESS: ${queries.length} rules found`));
  });
});
