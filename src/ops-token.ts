// The ops port's bearer token (opsTokenFile): read like the key file (src/watched-file.ts: a
// regular file only, size-capped, reloaded when it changes or on SIGHUP), held only as its
// SHA-256 digest, compared in constant time, and never written anywhere: the log lines say that
// it was loaded or why it was not, never what it is.
import { createHash, timingSafeEqual } from "node:crypto";
import type { Logger } from "pino";
import { settingName } from "./config.ts";
import { ConfigError } from "./startup-errors.ts";
import { describeLoadError, type WatchedFile, watchFile } from "./watched-file.ts";

/** A token is one line; far more than any generator makes. */
const MAX_TOKEN_FILE_BYTES = 4096;
/** Shorter is guessable by whoever can reach the port; `openssl rand -hex 32` makes 64. */
const MIN_TOKEN_LENGTH = 16;
/** As often as the key file: a rotated Secret takes effect within seconds. */
const POLL_INTERVAL_MS = 2000;

export interface OpsToken {
  /** Whether an Authorization header carries the token as `Bearer <token>`. */
  accepts(authorization: string | undefined): boolean;
  /** Reads the file again now (SIGHUP). */
  reload(why: string): Promise<void>;
  close(): Promise<void>;
}

export interface OpsTokenOptions {
  readonly file: string;
  readonly logger: Logger;
  /** How often the file is checked for a change (a test sets less). */
  readonly intervalMs?: number;
}

/** Reads the token now (a ConfigError when it cannot be), then keeps it current. */
export function openOpsToken(options: OpsTokenOptions): OpsToken {
  const { file, logger } = options;
  let watched: WatchedFile<Buffer>;
  try {
    watched = watchFile({
      file,
      maxBytes: MAX_TOKEN_FILE_BYTES,
      intervalMs: options.intervalMs ?? POLL_INTERVAL_MS,
      parse: digestOfTokenFile,
      onLoaded: (_digest, _previous, why) => logger.info({ file, why }, "ops token reloaded"),
      onFailed: (error, why) =>
        logger.error(
          { file, why, error: describeLoadError(error) },
          "ops token reload failed; keeping the previous token",
        ),
      onSlow: (pendingMs, why) =>
        logger.warn(
          { file, pendingMs, why },
          "ops token file read still pending (a hung mount?); polls are skipped until it returns",
        ),
    });
  } catch (error) {
    throw new ConfigError(
      `ops token file ${file} (${settingName("/opsTokenFile")}): ${describeLoadError(error)}`,
    );
  }
  return {
    accepts(authorization) {
      const given = bearerOf(authorization);
      if (given === undefined) return false;
      // Digests of equal length whatever was sent: the comparison says nothing of the token's length.
      return timingSafeEqual(sha256(given), watched.current());
    },
    reload: (why) => watched.reload(why),
    close: () => watched.close(),
  };
}

/** The token's digest; the messages say what is wrong with the file, never a character of it. */
function digestOfTokenFile(text: string): Buffer {
  // A Secret made with `echo` or a text editor ends with a newline.
  const token = text.trim();
  if (token.length === 0) throw new Error("the file is empty");
  if (!isBearerToken(token)) {
    throw new Error(
      "the token must be one line of letters, digits and - . _ ~ + / (then = padding), as an Authorization: Bearer header carries it",
    );
  }
  if (token.length < MIN_TOKEN_LENGTH) {
    throw new Error(`the token is shorter than ${MIN_TOKEN_LENGTH} characters (e.g. openssl rand -hex 32)`);
  }
  return sha256(token);
}

/** The credentials of `Bearer <token>` (RFC 6750 §2.1; the scheme in any case), else undefined. */
function bearerOf(header: string | undefined): string | undefined {
  if (header === undefined || header.length <= SCHEME.length) return undefined;
  if (header.slice(0, SCHEME.length).toLowerCase() !== SCHEME) return undefined;
  const token = header.slice(SCHEME.length).trim();
  return token.length > 0 && !token.includes(" ") ? token : undefined;
}
const SCHEME = "bearer ";

/** RFC 6750's b64token: 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"=". */
function isBearerToken(token: string): boolean {
  let end = token.length;
  while (end > 0 && token[end - 1] === "=") end--;
  if (end === 0) return false;
  for (let index = 0; index < end; index++) {
    const code = token.charCodeAt(index);
    const alphanumeric =
      (code >= 0x30 && code <= 0x39) || (code >= 0x41 && code <= 0x5a) || (code >= 0x61 && code <= 0x7a);
    if (!alphanumeric && !"-._~+/".includes(token[index] as string)) return false;
  }
  return true;
}

function sha256(text: string): Buffer {
  return createHash("sha256").update(text, "utf8").digest();
}
