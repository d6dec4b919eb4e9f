// Probot 14 as its users run it (plain JavaScript under plain Node), served by its own Node middleware, which answers once the
// handlers are done. BENCH_QUEUE unset: the in-memory app, a handler that does nothing, so an
// answered delivery is lost if the process dies. BENCH_QUEUE set: the durable peer, what Probot
// users are told to build (probot#1537): the handler adds each delivery to a BullMQ queue on Redis
// (job id = delivery id) before the answer, and a BullMQ worker in the same process takes the jobs.
import { generateKeyPairSync } from "node:crypto";
import { Queue, Worker } from "bullmq";
import { Probot, createNodeMiddleware } from "probot";
import { serveProbot } from "./serve.mjs";

const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
const probot = new Probot({
  appId: 1,
  privateKey: privateKey.export({ type: "pkcs1", format: "pem" }).toString(),
  secret: process.env.WEBHOOK_SECRET,
  logLevel: "warn",
});

const name = process.env.BENCH_QUEUE;
const bullmq = { connection: { host: "127.0.0.1", port: 6379 }, prefix: process.env.BENCH_PREFIX };
const queue = name ? new Queue(name, bullmq) : undefined;
// As many jobs at a time as Steward's worker runs deliveries (its STEWARD_CONCURRENCY default).
const worker = name ? new Worker(name, async () => {}, { ...bullmq, concurrency: 8 }) : undefined;

const middleware = await createNodeMiddleware(
  (app) => {
    app.onAny(async (context) => {
      await queue?.add(
        context.name,
        { id: context.id, name: context.name, payload: context.payload },
        { jobId: context.id },
      );
    });
  },
  { probot, webhooksPath: "/api/github/webhooks" },
);
serveProbot(
  middleware,
  async () => {
    while (
      queue &&
      Object.values(await queue.getJobCounts("waiting", "active", "delayed", "prioritized")).some((n) => n > 0)
    )
      await new Promise((r) => setTimeout(r, 50));
  },
  async () => {
    await worker?.close();
    await queue?.close();
  },
);
