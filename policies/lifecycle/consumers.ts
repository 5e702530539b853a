// The consumer label of the deprecated and the unstable call counters. Label values stay bounded
// even with a huge key file: past the cap a consumer is still logged and reported by name, and
// counted in the metric as "_other".
import { labelChildren } from "../../src/metrics.ts";

// Consumer names start with a letter or digit (the key file's pattern): these cannot collide.
export const ANONYMOUS = "_anonymous";
const OTHER_CONSUMERS = "_other";

/** Counts a call by consumer on a label child; one cap of distinct consumers over every counter. */
export type ConsumerCounter = (child: (label: string) => { inc(): void }) => (consumer: string) => void;

export function consumerCounters(maxConsumerLabels: number): ConsumerCounter {
  const labelled = new Set<string>();
  const consumerLabel = (consumer: string): string => {
    if (labelled.has(consumer)) return consumer;
    if (labelled.size >= maxConsumerLabels) return OTHER_CONSUMERS;
    labelled.add(consumer);
    return consumer;
  };
  return (child) => {
    const counters = labelChildren(child);
    return (consumer) => counters(consumerLabel(consumer)).inc();
  };
}
