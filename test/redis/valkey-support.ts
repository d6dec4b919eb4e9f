// A Valkey server for tests, from the machine's valkey-server (Debian's package): one node on a
// free loopback port, in a temporary directory, nothing persisted, handed out once it answers and
// says it is Valkey. Torn down by `stop()`. Tests skip (with a printed reason) where Valkey is
// missing (`valkeyAvailable`, beside the cluster's own check in cluster-support.ts).
import { ask, spawnNode, stopNodes, waitUntil } from "./cluster-support.js";

export { valkeyAvailable } from "./cluster-support.js";

export interface TestValkey {
  /** `redis://127.0.0.1:<port>/0`: what an operator would set STEWARD_REDIS_URL to. */
  url: string;
  stop(): Promise<void>;
}

export async function startValkey(): Promise<TestValkey> {
  const node = await spawnNode("valkey");
  const stop = () => stopNodes([node]);
  try {
    await waitUntil(
      `Valkey on ${node.port} answering`,
      () => ask(node.port, async (c) => (await c.ping()) === "PONG"),
      30_000,
    );
    // The server must be Valkey, not a Redis that answers to the same name.
    const info = await ask(node.port, (c) => c.info("server"));
    if (!/^server_name:valkey\s*$/m.test(info)) throw new Error(`the server on ${node.port} is not Valkey:\n${info}`);
    return { url: `redis://127.0.0.1:${node.port}/0`, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}
