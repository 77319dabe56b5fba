/**
 * What the sign-in page says when a browser tab comes back to it: a tab
 * that was signed in lost its session (the relay restarted, which ends
 * every session, or it was signed out elsewhere); a first visit needs no
 * word. The tab remembers it was signed in in sessionStorage (this tab
 * only, gone with it).
 */

const KEY = "crosschat-signed-in";

/** SESSION_ENDED is the sign-in page's note for a session that ended. */
export const SESSION_ENDED = "Your session ended: the relay restarted, or this session was signed out elsewhere. Sign in again.";

/** rememberSignedIn notes that this tab is signed in. */
export function rememberSignedIn(s: Pick<Storage, "setItem">): void {
  try {
    s.setItem(KEY, "1");
  } catch {
    // Storage refused (private mode, full): the note is a nicety.
  }
}

/** forgetSignedIn is for a sign-out by hand: the next sign-in page needs no note. */
export function forgetSignedIn(s: Pick<Storage, "removeItem">): void {
  try {
    s.removeItem(KEY);
  } catch {
    // As above.
  }
}

/** signInNote is the note for a tab that opens on the sign-in page. */
export function signInNote(s: Pick<Storage, "getItem">): string {
  try {
    return s.getItem(KEY) ? SESSION_ENDED : "";
  } catch {
    return "";
  }
}
