// Lease tokens name their owner (host and pid), so work leased by a process that died
// (kill -9) on this host is taken back at once instead of after the lease expires.
import { randomUUID } from "node:crypto";
import { hostname } from "node:os";

const host = hostname();

/**
 * This process incarnation, `host/pid/uuid`: records it leaves in a store (locks, in-flight
 * markers) name it, so a later process can tell they were left by one that is gone. The uuid
 * tells incarnations apart when a restarted process gets the same pid (PID 1 in a container).
 */
export const PROCESS_OWNER = `${host}/${process.pid}/${randomUUID()}`;

export function newLeaseToken(): string {
  return `${host}/${process.pid}/${randomUUID()}`;
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    // EPERM: it exists but belongs to someone else.
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** True when the token's owner is a process on this host that no longer exists. */
export function leaseOwnerDead(token: string): boolean {
  const [tokenHost, pidText] = token.split("/");
  if (tokenHost !== host) return false;
  const pid = Number(pidText);
  if (!Number.isInteger(pid) || pid <= 0) return false;
  if (pid === process.pid) return false;
  return !processAlive(pid);
}

/** True when `owner` (a PROCESS_OWNER) names a process on this host that is gone, or an earlier incarnation of this pid. */
export function processOwnerGone(owner: string, self = PROCESS_OWNER): boolean {
  if (leaseOwnerDead(owner)) return true;
  const [ownerHost, pid] = owner.split("/");
  const [selfHost, selfPid] = self.split("/");
  return ownerHost === selfHost && pid === selfPid && owner !== self;
}
