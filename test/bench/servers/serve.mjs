// The child's side of a server under test (child.ts starts it): report `url`, answer "idle" after
// `idle()` with the process's peak resident memory so far, close on SIGTERM. Plain JavaScript, so
// that a server runs under plain Node with no loader, as its users run it.

/**
 * @param {string} url
 * @param {() => Promise<unknown>} idle
 * @param {() => Promise<unknown>} close
 */
export function serveUnderTest(url, idle, close) {
  process.send({ url });
  process.on("message", (m) => {
    if (m === "idle") void idle().then(() => process.send({ maxRss: process.resourceUsage().maxRSS * 1024 }));
  });
  process.once("SIGTERM", () => void close().finally(() => process.exit(0)));
}
