// One run at a time, for work that must not overlap (a document reload, a read a stuck kernel may
// hold): a call made while a run is under way waits for it, and every call made meanwhile shares
// the one run that follows, so that any number of them cost one more run.

export interface OneAtATime<Args extends readonly unknown[], Result> {
  /** Runs now, or once the run under way ends (joining the run already queued after it). */
  call(...args: Args): Promise<Result>;
  /** A run is under way. */
  readonly running: boolean;
  /** A run is under way or queued. */
  readonly busy: boolean;
  /** The last run under way or queued, to wait for; undefined when idle. */
  readonly pending: Promise<Result> | undefined;
}

export function oneAtATime<Args extends readonly unknown[], Result>(
  run: (...args: Args) => Promise<Result>,
): OneAtATime<Args, Result> {
  let inFlight: Promise<Result> | undefined;
  let followUp: Promise<Result> | undefined;
  const start = (...args: Args): Promise<Result> => {
    inFlight = run(...args).finally(() => {
      inFlight = undefined;
    });
    return inFlight;
  };
  // The queued run starts after the one under way whatever its outcome: a failed run must not
  // leave the queue holding its rejection for every later call.
  const next = (args: Args) => () => {
    followUp = undefined;
    return start(...args);
  };
  return {
    call(...args) {
      if (inFlight === undefined) return start(...args);
      followUp ??= inFlight.then(next(args), next(args));
      return followUp;
    },
    get running() {
      return inFlight !== undefined;
    },
    get busy() {
      return inFlight !== undefined || followUp !== undefined;
    },
    get pending() {
      return followUp ?? inFlight;
    },
  };
}
