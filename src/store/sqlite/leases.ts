// Leases in SQLite: a token names a delivery or a task row, so each step asks both tables
// (each keeps its own statements beside its table).
import type { LeasesPart } from "../contract.js";
import type { SqliteDeliveries } from "./deliveries.js";
import type { SqliteTasks } from "./tasks.js";

export class SqliteLeases implements LeasesPart {
  constructor(
    private readonly deliveries: SqliteDeliveries,
    private readonly tasks: SqliteTasks,
  ) {}

  async renewLease(token: string, leaseMs: number): Promise<boolean> {
    const until = Date.now() + leaseMs;
    return this.deliveries.renewLease(token, until) || this.tasks.renewLease(token, until);
  }

  async releaseLease(token: string, dueAt?: Date): Promise<void> {
    this.deliveries.releaseLease(token, dueAt?.getTime());
    this.tasks.releaseLease(token, dueAt?.getTime());
  }

  async pendingWork(now: Date): Promise<number> {
    return this.deliveries.pending() + this.tasks.pending(now.getTime());
  }

  async nextDueAt(): Promise<Date | undefined> {
    const times = [this.deliveries.nextDueAt(), this.tasks.nextDueAt()].filter((t): t is number => t !== undefined);
    return times.length ? new Date(Math.min(...times)) : undefined;
  }

  async recoverOrphans(): Promise<number> {
    return this.deliveries.recoverOrphans() + this.tasks.recoverOrphans();
  }
}
