/**
 * What the sign-in page says when a browser tab comes back to it: a tab
 * that was signed in lost its session; a first visit needs no word. Each
 * tab signs in on its own (its session is kept in its sessionStorage), so
 * the usual causes are the session's lifetime (sessionLifetime in
 * internal/web/session.go) and a restart of the relay, which ends every
 * session. The tab remembers it was signed in in sessionStorage too.
 */

const KEY = "crosschat-signed-in";

/** SESSION_ENDED is the sign-in page's note for a session that ended. */
export const SESSION_ENDED = "Your session in this tab ended: sessions last 12 hours, and a relay restart ends them sooner. Sign in again.";

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
