// Lease tokens name their owner (host and pid), so work leased by a process that died
// (kill -9) on this host is taken back at once instead of after the lease expires.
import { randomUUID } from "node:crypto";
import { hostname } from "node:os";

const host = hostname();

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
