// The write slots of installations shared by replicas through PostgreSQL: one write of an
// installation at a time across the deployment, the next no sooner than the gap the previous
// one asked for after it was answered. A slot is a row (holder, held until, gap, next write
// at); its holder renews the hold while its request is in flight, so a holder killed mid-write
// frees the slot once the hold lapses, and a slow request keeps it as long as it lasts. A dead
// holder's write may have been answered at any moment before its hold lapsed, so its slot is
// taken over only its gap after the lapse: the spacing it asked for holds even then.
//
// Times are the server's (clock_timestamp()): replicas with skewed clocks agree on the spacing.
// A replica waiting behind a live holder sleeps until the holder's release is announced
// (NOTIFY) rather than asking again and again; the wait is bounded, for a notice lost.
import type pg from "pg";
import type { WriteSlots, WriteTurn } from "../../api/types.js";
import { PROCESS_OWNER } from "../../lifecycle/process-owner.js";
import { stoppableDelay, throwIfAnyStopped } from "../../lifecycle/abort-scope.js";
import { createKeyedQueue } from "../keyed-queue.js";
import type { Notices } from "./notices.js";

/** A dead holder's hold lapses this long after its last renewal. */
export const WRITE_SLOT_TTL_MS = 3_000;
/** Longest sleep behind a live holder without a notice (one lost, or a holder that died). */
const HELD_WAIT_MS = 1_000;

/** `n` milliseconds (an integer parameter or column) as an interval. */
const ms = (n: string) => `make_interval(secs => (${n})::integer / 1000.0)`;

export class PostgresWriteSlots implements WriteSlots {
  /** This process's queue of writes per installation: one of them contends for the slot at a time. */
  readonly #queue = createKeyedQueue();
  readonly #held = new Set<string>();
  #seq = 0;
  readonly #acquireSql: string;
  readonly #renewSql: string;
  readonly #releaseSql: string;

  constructor(
    private readonly pool: pg.Pool,
    /** Quoted schema name. */
    s: string,
    private readonly notices: Notices,
    private readonly owner = PROCESS_OWNER,
    private readonly ttlMs = WRITE_SLOT_TTL_MS,
  ) {
    // $1 installation, $2 holder, $3 ttl ms, $4 gap ms. Granted when nobody holds the slot and
    // the previous gap has passed, or the holder's hold lapsed at least its gap ago. Otherwise
    // the answer says whether a live holder has it and how long until it could be free.
    this.#acquireSql = `
      WITH granted AS (
        INSERT INTO ${s}.write_slots AS w (installation, holder, held_until, gap_ms, next_at)
        VALUES ($1, $2, clock_timestamp() + ${ms("$3")}, $4::integer, clock_timestamp() + ${ms("$4")})
        ON CONFLICT (installation) DO UPDATE
          SET holder = excluded.holder, held_until = excluded.held_until, gap_ms = excluded.gap_ms, next_at = excluded.next_at
          WHERE w.next_at <= clock_timestamp()
            AND (w.holder IS NULL OR w.held_until + ${ms("w.gap_ms")} <= clock_timestamp())
        RETURNING 1
      )
      SELECT EXISTS (SELECT 1 FROM granted) AS granted,
        w.holder IS NOT NULL AND w.held_until > clock_timestamp() AS held,
        greatest(0, ceil(1000 * extract(epoch FROM
          CASE WHEN w.holder IS NULL THEN w.next_at ELSE greatest(w.next_at, w.held_until + ${ms("w.gap_ms")}) END
          - clock_timestamp())))::integer AS wait_ms
      FROM (SELECT 1) AS one LEFT JOIN ${s}.write_slots w ON w.installation = $1`;
    this.#renewSql = `UPDATE ${s}.write_slots SET held_until = clock_timestamp() + ${ms("$3")}
      WHERE installation = $1 AND holder = $2`;
    // $1 installation, $2 holder, $3 gap ms.
    this.#releaseSql = `UPDATE ${s}.write_slots
      SET holder = NULL, held_until = NULL, gap_ms = $3::integer, next_at = greatest(next_at, clock_timestamp() + ${ms("$3")})
      WHERE installation = $1 AND holder = $2`;
  }

  run<T>(who: string, send: () => Promise<T>, turn: WriteTurn): Promise<T> {
    return this.#queue.run(who, () => this.#turn(who, send, turn.gapMs, turn.stops ?? []), turn);
  }

  /** Installations whose slot this process holds now. */
  held(): string[] {
    return [...this.#held];
  }

  async #turn<T>(who: string, send: () => Promise<T>, gapMs: number, stops: readonly AbortSignal[]): Promise<T> {
    // Each turn has its own holder name (this process, then a counter): a late release of an earlier turn cannot free a later one.
    const holder = `${this.owner}#${++this.#seq}`;
    const gap = Math.max(0, Math.ceil(gapMs));
    for (;;) {
      throwIfAnyStopped(stops);
      const { rows } = await this.pool.query<{ granted: boolean; held: boolean | null; wait_ms: number | null }>(
        this.#acquireSql,
        [who, holder, this.ttlMs, gap],
      );
      const answer = rows[0]!;
      if (answer.granted) break;
      const wait = answer.wait_ms ?? 0;
      if (answer.held) await this.notices.wait(`slot:${who}`, Math.min(wait, HELD_WAIT_MS), stops);
      else await stoppableDelay(wait, stops);
    }
    this.#held.add(who);
    const renew = setInterval(
      () => void this.pool.query(this.#renewSql, [who, holder, this.ttlMs]).catch(() => undefined),
      this.ttlMs / 3,
    );
    renew.unref();
    try {
      return await send();
    } finally {
      clearInterval(renew);
      this.#held.delete(who);
      // A release that fails leaves the slot to lapse with its hold.
      try {
        const { rowCount } = await this.pool.query(this.#releaseSql, [who, holder, gap]);
        if (rowCount) void this.notices.notify(`slot:${who}`);
      } catch {
        // lapses
      }
    }
  }
}
