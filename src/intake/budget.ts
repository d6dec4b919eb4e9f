// Bodies are held whole until their signature is checked, so unauthenticated senders decide how
// much memory is in use. A global budget bounds it: each body reserves its declared length (or
// the size limit when it declares none) before a byte is read, and a request that does not fit
// is answered 503 with Retry-After at once, never read.

/** Bytes of request bodies that may be held at once, all requests together. */
export const DEFAULT_MAX_BYTES_IN_FLIGHT = 48 * 1024 * 1024;
/** Bodies that may be read at once (unverified senders each hold a socket and a timer). */
export const DEFAULT_MAX_BODIES_IN_FLIGHT = 256;

export interface Reservation {
  release(): void;
}

export class BodyBudget {
  private bytes = 0;
  private bodies = 0;

  constructor(
    readonly maxBytes = DEFAULT_MAX_BYTES_IN_FLIGHT,
    readonly maxBodies = DEFAULT_MAX_BODIES_IN_FLIGHT,
  ) {}

  /** Room for a body of up to `bytes`, or undefined when the budget is spent. */
  tryReserve(bytes: number): Reservation | undefined {
    if (this.bodies + 1 > this.maxBodies || this.bytes + bytes > this.maxBytes) return undefined;
    this.bytes += bytes;
    this.bodies += 1;
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        this.bytes -= bytes;
        this.bodies -= 1;
      },
    };
  }

  get inFlight(): { bytes: number; bodies: number } {
    return { bytes: this.bytes, bodies: this.bodies };
  }
}
