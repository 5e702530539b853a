/**
 * Watches the test process itself: any uncaught exception or unhandled rejection while the
 * gateway runs in-process is a crash the gateway would have had. `uncaughtExceptionMonitor`
 * only observes, so node:test still reports the error where it happened.
 */
export function watchForCrashes(): { readonly crashes: string[]; stop(): void } {
  const crashes: string[] = [];
  const onException = (error: Error) => crashes.push(`uncaughtException: ${error.stack ?? error}`);
  const onRejection = (reason: unknown) =>
    crashes.push(`unhandledRejection: ${(reason as Error)?.stack ?? String(reason)}`);
  process.on("uncaughtExceptionMonitor", onException);
  process.on("unhandledRejection", onRejection);
  return {
    crashes,
    stop() {
      process.off("uncaughtExceptionMonitor", onException);
      process.off("unhandledRejection", onRejection);
    },
  };
}
