// SonicBoom's write (stdout's destination, src/logger.ts) without its cost per line: before it
// appends a line to its last buffer, it measures that buffer with Buffer.byteLength, a scan of up
// to maxWrite bytes (16 KiB) of a string it has just grown by concatenation, which V8 flattens
// first. At one access line per request that scan was 1.2 µs of ~62 µs of CPU per request
// (list20 profile, docs/performance.md). Here the last buffer's byte length is remembered with the
// string it belongs to, and measured again only when the last buffer is another string (SonicBoom
// pushed, shifted or put back one): the same writes, in the same sizes, as SonicBoom's own.
//
// It replaces a method of one SonicBoom instance and reads its fields; if a SonicBoom release
// changes them, the instance keeps its own write (test/unit/log-destination.test.ts fails then).

interface SonicFields {
  destroyed: boolean;
  _len: number;
  _hwm: number;
  _bufs: string[];
  _writing: boolean;
  minLength: number;
  maxLength: number;
  maxWrite: number;
  _actualWrite(): void;
  emit(event: string, data: unknown): boolean;
  write(data: string): boolean;
}

function hasFields(sonic: Partial<SonicFields>): sonic is SonicFields {
  return (
    Array.isArray(sonic._bufs) &&
    typeof sonic._len === "number" &&
    typeof sonic._hwm === "number" &&
    typeof sonic._writing === "boolean" &&
    typeof sonic.minLength === "number" &&
    typeof sonic.maxLength === "number" &&
    typeof sonic.maxWrite === "number" &&
    typeof sonic._actualWrite === "function"
  );
}

/** True when the instance's write was replaced; false when its fields are not the ones known here. */
export function measureLinesOnce(destination: object): boolean {
  const sonic = destination as Partial<SonicFields>;
  if (!hasFields(sonic)) return false;
  let lastBuffer = "";
  let lastBytes = 0;
  sonic.write = function write(data: string): boolean {
    if (sonic.destroyed) throw new Error("SonicBoom destroyed");
    const line = `${data}`;
    const lineBytes = Buffer.byteLength(line);
    const length = sonic._len + lineBytes;
    const bufs = sonic._bufs;
    if (sonic.maxLength && length > sonic.maxLength) {
      sonic.emit("drop", line);
      return sonic._len < sonic._hwm;
    }
    const last = bufs.length - 1;
    // Equal strings have equal byte lengths; the same string compares by reference, in O(1).
    const lastLength =
      last < 0 ? 0 : bufs[last] === lastBuffer ? lastBytes : Buffer.byteLength(bufs[last] as string);
    if (last < 0 || lastLength + lineBytes > sonic.maxWrite) {
      bufs.push(line);
      lastBuffer = line;
      lastBytes = lineBytes;
    } else {
      lastBuffer = (bufs[last] as string) + line;
      bufs[last] = lastBuffer;
      lastBytes = lastLength + lineBytes;
    }
    sonic._len = length;
    if (!sonic._writing && sonic._len >= sonic.minLength) sonic._actualWrite();
    return sonic._len < sonic._hwm;
  };
  return true;
}
