// Bodies are held whole until their signature is checked, so unauthenticated senders decide how
// much memory is in use and how many bodies are being waited for. Admission bounds both, and
// shares them between peers so one sender cannot spend what another needs:
// - a body is charged the bytes it actually delivered, chunk by chunk, never its declared length
//   (a socket declaring 24 MiB and sending nothing holds nothing);
// - a body holds one of the places for bodies being read until it arrived whole; its bytes stay
//   charged until the delivery was recorded or refused;
// - per peer (an IPv4 address, an IPv6 /64) at most a share of places and bytes;
// - when all room is taken, a peer holding less takes room from the peer holding the most
//   (its body still arriving is cut off, answered 503): max-min fairness, so a genuine sender
//   whose bodies arrive fast and whole is never the one refused while a stranger holds more.
// A body that finds no room is answered 503 with Retry-After.

/** Bytes of request bodies that may be held at once, all requests together. */
export const DEFAULT_MAX_BYTES_IN_FLIGHT = 48 * 1024 * 1024;
/** Bodies that may be being read at once (unverified senders each hold a socket and a timer). */
export const DEFAULT_MAX_BODIES_IN_FLIGHT = 256;
/** Bodies one peer may have being read at once. */
export const DEFAULT_MAX_BODIES_PER_PEER = 64;

export interface AdmissionLimits {
  maxBytes: number;
  maxBodies: number;
  /** Default: half of maxBytes, but at least one body of `largestBody` (and at most maxBytes). */
  maxBytesPerPeer: number;
  maxBodiesPerPeer: number;
}

export interface AdmittedBody {
  /** `cut` is called (once) if this body must give its room to a peer holding less (it is answered 503). */
  onEvict(cut: () => void): void;
  /** Counts `bytes` more received; false when there is no room for them (the body is refused). */
  charge(bytes: number): boolean;
  /** The body arrived whole: it gives back its place among the bodies being read (its bytes stay charged). */
  complete(): void;
  /** Gives back everything (idempotent). */
  release(): void;
}

/**
 * The peer a remote address counts as: an IPv4 address (IPv4-mapped IPv6 included), or the /64
 * of an IPv6 address, since one IPv6 host is routinely given a whole /64.
 */
export function peerKey(address: string | undefined): string {
  if (!address) return "unknown";
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1]!;
  if (!address.includes(":")) return address;
  const bare = address.split("%")[0]!.toLowerCase();
  const [head = "", tail] = bare.split("::");
  const left = head ? head.split(":") : [];
  const right = tail ? tail.split(":") : [];
  // An embedded IPv4 tail takes two groups; only the first four groups matter here.
  const groups =
    tail === undefined
      ? left
      : [...left, ...Array<string>(Math.max(0, 8 - left.length - right.length)).fill("0"), ...right];
  return `${groups
    .slice(0, 4)
    .map((g) => g.replace(/^0+(?=.)/, ""))
    .join(":")}::/64`;
}

interface Ticket {
  readonly peer: Peer;
  readonly startedAt: number;
  cut?: () => void;
  bytes: number;
  reading: boolean;
  released: boolean;
}

interface Peer {
  readonly key: string;
  bytes: number;
  reading: number;
  readonly tickets: Set<Ticket>;
}

export class BodyAdmission {
  readonly limits: AdmissionLimits;
  private bytes = 0;
  private reading = 0;
  private readonly peers = new Map<string, Peer>();

  constructor(limits: Partial<AdmissionLimits> & { largestBody?: number } = {}) {
    const maxBytes = limits.maxBytes ?? DEFAULT_MAX_BYTES_IN_FLIGHT;
    const maxBodies = limits.maxBodies ?? DEFAULT_MAX_BODIES_IN_FLIGHT;
    this.limits = {
      maxBytes,
      maxBodies,
      maxBytesPerPeer:
        limits.maxBytesPerPeer ?? Math.min(maxBytes, Math.max(limits.largestBody ?? 0, Math.floor(maxBytes / 2))),
      maxBodiesPerPeer: limits.maxBodiesPerPeer ?? Math.min(maxBodies, DEFAULT_MAX_BODIES_PER_PEER),
    };
  }

  /** A place for a body from `address`, or undefined when that peer or the whole intake has none. */
  admit(address: string | undefined): AdmittedBody | undefined {
    const key = peerKey(address);
    const peer = this.peers.get(key) ?? { key, bytes: 0, reading: 0, tickets: new Set<Ticket>() };
    if (peer.reading >= this.limits.maxBodiesPerPeer) return undefined;
    while (this.reading >= this.limits.maxBodies) {
      // Taken from a peer that would still have more being read than this one once admitted.
      const victim = this.heaviest(peer, (p) => p.reading);
      if (!victim || victim.reading <= peer.reading + 1) return undefined;
      this.evict(slowest(victim));
    }
    this.peers.set(key, peer);
    const ticket: Ticket = { peer, startedAt: performance.now(), bytes: 0, reading: true, released: false };
    peer.tickets.add(ticket);
    peer.reading += 1;
    this.reading += 1;
    return {
      onEvict: (cut) => (ticket.cut = cut),
      charge: (bytes) => this.charge(ticket, bytes),
      complete: () => this.complete(ticket),
      release: () => this.release(ticket),
    };
  }

  get inFlight(): { bytes: number; bodies: number; peers: number } {
    return { bytes: this.bytes, bodies: this.reading, peers: this.peers.size };
  }

  private charge(ticket: Ticket, bytes: number): boolean {
    if (ticket.released) return false;
    const { peer } = ticket;
    if (peer.bytes + bytes > this.limits.maxBytesPerPeer) return false;
    while (this.bytes + bytes > this.limits.maxBytes) {
      // Taken from a peer that would still hold more than this one with these bytes.
      const victim = this.heaviest(peer, (p) => p.bytes);
      if (!victim || victim.bytes <= peer.bytes + bytes) return false;
      this.evict(largest(victim));
    }
    ticket.bytes += bytes;
    peer.bytes += bytes;
    this.bytes += bytes;
    return true;
  }

  private complete(ticket: Ticket): void {
    if (ticket.released || !ticket.reading) return;
    ticket.reading = false;
    ticket.peer.reading -= 1;
    this.reading -= 1;
  }

  private release(ticket: Ticket): void {
    if (ticket.released) return;
    this.complete(ticket);
    ticket.released = true;
    const { peer } = ticket;
    peer.bytes -= ticket.bytes;
    this.bytes -= ticket.bytes;
    peer.tickets.delete(ticket);
    if (peer.tickets.size === 0) this.peers.delete(peer.key);
  }

  private evict(ticket: Ticket): void {
    this.release(ticket);
    ticket.cut?.();
  }

  /** The other peer with the most by `measure` among those with a body still arriving (only those can give room). */
  private heaviest(except: Peer, measure: (p: Peer) => number): Peer | undefined {
    let best: Peer | undefined;
    for (const p of this.peers.values()) {
      if (p === except || p.reading === 0) continue;
      if (!best || measure(p) > measure(best)) best = p;
    }
    return best;
  }
}

/** The peer's body still arriving that delivered the fewest bytes a second so far. */
function slowest(peer: Peer): Ticket {
  const now = performance.now();
  return pick(peer, (t) => -t.bytes / Math.max(1, now - t.startedAt));
}

/** The peer's body still arriving that holds the most bytes. */
function largest(peer: Peer): Ticket {
  return pick(peer, (t) => t.bytes);
}

function pick(peer: Peer, score: (t: Ticket) => number): Ticket {
  let best: Ticket | undefined;
  for (const t of peer.tickets) if (t.reading && (!best || score(t) > score(best))) best = t;
  return best!;
}
