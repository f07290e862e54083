/**
 * Which room answers when several hear the same wake word at once: the one with the best
 * evidence (a clearly higher wake score, else loudness). Rooms are compared by when the audio
 * *arrived*, not when a busy machine got round to scoring it.
 */

/** Detections of the same wake word this close together are one person heard in several rooms (ms). */
export const ARBITRATION_MS = 500;
/**
 * Wake scores closer than this are a tie, settled by loudness: the score is the first frame's
 * over the threshold, and frame alignment alone moves it by up to ~0.2 (the same audio in two
 * rooms scored 0.82 and 1.00).
 */
const SCORE_TIE = 0.25;
/** Longest wait for a room whose reading lags behind to catch up before the rooms' claims are settled (ms). */
const MAX_SETTLE_MS = 3_000;
/** Longest a room's command waits for its verdict before acting anyway (ms): the arbiter settles within MAX_SETTLE_MS and a poll; this is the backstop. */
export const MAX_VERDICT_WAIT_MS = MAX_SETTLE_MS + 1_000;
/** How often an open window checks whether every streaming room has read past it (ms). */
const SETTLE_POLL_MS = 50;

export interface Evidence {
  /** The wake-word score, when IRIS scored it (not when the satellite heard it). */
  score?: number;
  loudness: number;
}

/** How a claim was settled: won, or lost to `winner` (with both rooms' evidence, for the log). */
export type Verdict = { won: true } | { won: false; winner: string; mine?: Evidence; theirs?: Evidence };

interface Claim {
  room: string;
  evidence: () => Evidence;
  /** One per claim the room made in the window (a trigger, then another): all get its verdict. */
  decide: ((verdict: Verdict) => void)[];
}

/**
 * Settles which room answers when several hear the same wake word at once. Rooms are compared
 * by when the audio *arrived* (not when a busy machine got round to scoring it): claims whose
 * wake word arrived within `ARBITRATION_MS` of the first are one window, settled once every
 * streaming room has read past it (or after `MAX_SETTLE_MS`). A claim for a window already
 * settled loses: another room is answering.
 */
interface ClaimWindow {
  /** When the first claim's wake word arrived (performance.now()). */
  firstMs: number;
  openedMs: number;
  claims: Claim[];
  timer: NodeJS.Timeout;
}

export class Arbiter {
  #window: ClaimWindow | undefined;
  #settled: { firstMs: number; winner: string } | undefined;

  /**
   * `heardMs`: when the wake word's audio arrived; `readBeyond(ms)`: whether every room still
   * streaming has read its audio past that time. Resolves true when `room` answers. A room that
   * claims again in the same window (triggered twice) is one claimant, with its latest
   * evidence: it neither loses to itself nor counts twice against the others.
   */
  claim(room: string, heardMs: number, evidence: () => Evidence, readBeyond: (ms: number) => boolean): Promise<Verdict> {
    const settled = this.#settled;
    if (settled !== undefined && Math.abs(heardMs - settled.firstMs) <= ARBITRATION_MS) {
      return Promise.resolve(settled.winner === room ? { won: true } : { won: false, winner: settled.winner });
    }
    return new Promise((decide) => {
      const window = this.#window;
      if (window !== undefined && Math.abs(heardMs - window.firstMs) <= ARBITRATION_MS) {
        const mine = window.claims.find((c) => c.room === room);
        if (mine === undefined) window.claims.push({ room, evidence, decide: [decide] });
        else {
          mine.evidence = evidence;
          mine.decide.push(decide);
        }
        return;
      }
      if (window !== undefined) this.#settle(); // an older window: done
      const opened: ClaimWindow = { firstMs: heardMs, openedMs: performance.now(), claims: [{ room, evidence, decide: [decide] }], timer: setInterval(() => {
        if (readBeyond(opened.firstMs + ARBITRATION_MS) || performance.now() - opened.openedMs > MAX_SETTLE_MS) this.#settle();
      }, SETTLE_POLL_MS) };
      opened.timer.unref();
      this.#window = opened;
    });
  }

  #settle(): void {
    const window = this.#window;
    if (window === undefined) return;
    clearInterval(window.timer);
    this.#window = undefined;
    const scored = window.claims.map((c) => ({ ...c, e: c.evidence() }));
    const best = scored.reduce<(typeof scored)[number] | undefined>((a, b) => (a === undefined || better(b.e, a.e) ? b : a), undefined);
    this.#settled = { firstMs: window.firstMs, winner: best?.room ?? '' };
    for (const c of scored) {
      const verdict: Verdict = c === best || best === undefined ? { won: true } : { won: false, winner: best.room, mine: c.e, theirs: best.e };
      for (const decide of c.decide) decide(verdict);
    }
  }

  stop(): void {
    clearInterval(this.#window?.timer);
    for (const c of this.#window?.claims ?? []) for (const decide of c.decide) decide({ won: true });
    this.#window = undefined;
  }
}

/** Whether `a` is better evidence than `b`: a clearly higher wake score, else louder. */
export function better(a: Evidence, b: Evidence): boolean {
  if (a.score !== undefined && b.score !== undefined && Math.abs(a.score - b.score) > SCORE_TIE) return a.score > b.score;
  return a.loudness > b.loudness;
}

export const describeEvidence = (e: Evidence): string => `${e.score === undefined ? '' : `score ${e.score.toFixed(2)}, `}loudness ${e.loudness.toFixed(3)}`;
