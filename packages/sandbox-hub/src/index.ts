// The sandbox hub's public surface: start a hub, drive it, read what happened.
export { createHub, type CreateHubOptions, type HubEnv, type HubHandle } from "./hub.js";
export { Control, type InstallOptions } from "./control.js";
export { BROAD_GRANT, DEMO_ORG, DEMO_REPO, type AppGrant } from "./seed/demo.js";
export type { RequestRecord } from "./sandbox-hub.js";
export type { Effect, EffectsLog } from "./core/effects.js";
export type { Hub, HubEvent, Installation, Org, Repo, User, DeliveryRecord } from "./core/types.js";
export type { Fault } from "./core/faults.js";
export type { Run, JobSpec, Job, Attempt, Workflow, StartRunOptions, FinishJobOptions } from "./actions/domain.js";
export type { Domains } from "./domains.js";
export { seededRandom, type Random } from "./core/random.js";
export type { MergeGroup } from "./pulls/merge-queue.js";
