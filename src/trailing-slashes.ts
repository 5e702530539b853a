// A URL's or a path's trailing slashes, cut by one scan from the end. The regex every caller used
// to write, /\/+$/, is quadratic on a long run of slashes that does not end the text: V8 tries the
// run again from each of its slashes (recheck: "2nd degree polynomial").

/** text without the slashes it ends with: "/v1/" is "/v1", "/" is "". */
export function withoutTrailingSlashes(text: string): string {
  let end = text.length;
  while (end > 0 && text.charCodeAt(end - 1) === 47 /* / */) end--;
  return end === text.length ? text : text.slice(0, end);
}
