// A command's output file, written whole or not at all: a reader (a mail client, a browser, a
// cron job copying the report) never sees half a page, and a run that fails leaves the last good
// file where it was.
import { randomBytes } from "node:crypto";
import { open, rename, stat, unlink } from "node:fs/promises";
import { basename, dirname, join } from "node:path";

/** Writes `text` to a temporary file beside `target`, flushes it to disk, then renames it over `target`. */
export async function writeFileAtomically(target: string, text: string): Promise<void> {
  // The same directory, so that the rename stays on one file system and is atomic.
  const temporary = join(
    dirname(target),
    `.${basename(target)}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`,
  );
  // A file the user already has keeps its mode (a report kept 0600 stays so).
  const mode = await stat(target).then(
    (stats) => stats.mode & 0o777,
    () => 0o666,
  );
  try {
    const handle = await open(temporary, "wx", mode);
    try {
      await handle.chmod(mode & ~process.umask());
      await handle.writeFile(text);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temporary, target);
  } catch (error) {
    await unlink(temporary).catch(() => {
      // never created, or already renamed
    });
    throw error;
  }
}
