/**
 * Polls `probe` until it answers, for what the gateway does after the answer a test awaited (a
 * log line, a counter, a key file reloaded). A probe answers with any value but `undefined` or
 * `false`, and that value is returned; one that throws (an assertion not yet true) is polled
 * again. Past the deadline it fails naming what was awaited, with the last error the probe threw
 * (message and cause).
 */
export async function eventually<T>(
  what: string,
  probe: () => T | Promise<T>,
  timeoutMs = 5000,
): Promise<Exclude<T, undefined | false>> {
  const deadline = performance.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined && value !== false) return value as Exclude<T, undefined | false>;
    } catch (error) {
      lastError = error;
    }
    if (performance.now() > deadline) {
      if (lastError === undefined) throw new Error(`not within ${timeoutMs} ms: ${what}`);
      const last = lastError instanceof Error ? lastError.message : String(lastError);
      throw new Error(`not within ${timeoutMs} ms: ${what}; the last try failed with: ${last}`, {
        cause: lastError,
      });
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
