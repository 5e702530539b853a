// /metrics read back as Prometheus text, the way a scraper reads it.
import { request } from "./http.ts";

export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

/** Parses the Prometheus text exposition format (what prom-client writes) into samples. */
export function parsePrometheus(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/.exec(line);
    if (!match) throw new Error(`not Prometheus text: ${line}`);
    const labels: Record<string, string> = {};
    const labelText = match[2] ?? "";
    for (const label of labelText.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      labels[label[1] as string] = (label[2] as string).replace(/\\(.)/g, (_, c: string) =>
        c === "n" ? "\n" : c,
      );
    }
    const raw = match[3] as string;
    samples.push({
      name: match[1] as string,
      labels,
      value:
        raw === "+Inf" ? Number.POSITIVE_INFINITY : raw === "-Inf" ? Number.NEGATIVE_INFINITY : Number(raw),
    });
  }
  return samples;
}

/** Scrapes /metrics of a test gateway. */
export async function scrape(gateway: { readonly opsUrl: string }): Promise<Sample[]> {
  const answer = await request(`${gateway.opsUrl}/metrics`);
  if (answer.status !== 200) throw new Error(`/metrics answered ${answer.status}`);
  return parsePrometheus(answer.body);
}

/** The value of the one sample with this name and these labels (0 when absent). */
export function sampleValue(
  samples: readonly Sample[],
  name: string,
  labels: Record<string, string> = {},
): number {
  const found = samples.filter(
    (sample) =>
      sample.name === name && Object.entries(labels).every(([key, value]) => sample.labels[key] === value),
  );
  return found.reduce((sum, sample) => sum + sample.value, 0);
}
