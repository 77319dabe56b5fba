// The browser shim: when the dashboard is served by `crosschat-relay serve`
// there is no Wails runtime, so this defines window.go and window.runtime on
// top of the HTTP bridge. The generated wrappers in wailsjs/ then work
// unchanged: window.go.app.<Service>.<Method>(...args) becomes
// POST /bridge/<Service>.<Method> with the arguments as a JSON array, and
// runtime events come from GET /bridge/events (server-sent events).
//
// Sign-in answers a session value that is kept in this origin's
// sessionStorage and sent as the X-Crosschat-Session header; no cookie is
// used, because browsers send cookies to every port of a host (any other
// local web server would receive them). EventSource cannot send headers, so
// the stream is opened with a one-time ticket from POST /bridge/events/ticket.
import { ApiError, ErrNetwork, ErrUnauthorized, toApiError } from "./errors";

/** The event carrying a relay.Change, in the window and over SSE. */
export const CHANGE_EVENT = "relay:change";
/** Emitted by the shim with `true`/`false` when the change stream connects or drops. */
export const CONNECTION_EVENT = "bridge:connection";
/** Header sent with every bridge request (kept for older relays). */
export const CSRF_HEADER = "X-Crosschat-Request";
/** Header carrying the session value. */
export const SESSION_HEADER = "X-Crosschat-Session";
/** sessionStorage key of the session value. */
export const SESSION_KEY = "crosschat.session";

/** The part of Storage the shim uses (sessionStorage in the browser). */
export type SessionStorageLike = Pick<Storage, "getItem" | "setItem" | "removeItem">;

function defaultStorage(): SessionStorageLike | undefined {
  try {
    return typeof window !== "undefined" ? window.sessionStorage : undefined;
  } catch {
    return undefined; // storage disabled: the session lasts until the next reload
  }
}

function sessionHeaders(storage: SessionStorageLike | undefined): Record<string, string> {
  let v: string | null = null;
  try {
    v = storage?.getItem(SESSION_KEY) ?? null;
  } catch {
    v = null;
  }
  return v ? { [SESSION_HEADER]: v } : {};
}

type Listener = { cb: (...data: unknown[]) => void; remaining: number };

interface EventSourceLike {
  addEventListener(type: string, listener: (ev: MessageEvent) => void): void;
  close(): void;
  onopen: ((ev: Event) => unknown) | null;
  onerror: ((ev: Event) => unknown) | null;
}

export interface BridgeDeps {
  fetch: (input: string, init?: RequestInit) => Promise<Response>;
  EventSource: new (url: string) => EventSourceLike;
  /** Prefix of bridge URLs; "" means same origin. */
  base?: string;
  /** Called when a call or the stream finds the session gone. */
  onUnauthorized?: () => void;
  /** Reconnect delays in ms (first, max). */
  retryMs?: [number, number];
  setTimeout?: (fn: () => void, ms: number) => unknown;
  clearTimeout?: (id: unknown) => void;
  clipboardWrite?: (text: string) => Promise<void>;
  setTitle?: (title: string) => void;
  openURL?: (url: string) => void;
  /** Where the session value is kept; defaults to window.sessionStorage. */
  storage?: SessionStorageLike;
}

export interface Bridge {
  go: { app: Record<string, Record<string, (...args: unknown[]) => Promise<unknown>>> };
  runtime: Record<string, (...args: any[]) => any>;
  /** Ends the change stream and drops every listener. */
  close(): void;
}

/** readError turns a failed bridge response into an ApiError. */
async function readError(res: Response): Promise<ApiError> {
  let body: unknown;
  try {
    body = JSON.parse(await res.text());
  } catch {
    body = undefined;
  }
  const err = toApiError(body && typeof body === "object" ? body : `http_${res.status}: The relay answered ${res.status}.`);
  return new ApiError(err.code, err.message, err.details, res.status);
}

export function createBridge(deps: BridgeDeps): Bridge {
  const base = deps.base ?? "";
  const setT = deps.setTimeout ?? ((fn, ms) => setTimeout(fn, ms));
  const clearT = deps.clearTimeout ?? ((id) => clearTimeout(id as ReturnType<typeof setTimeout>));
  const [retryFirst, retryMax] = deps.retryMs ?? [1000, 15000];
  const storage = deps.storage ?? defaultStorage();

  async function call(service: string, method: string, args: unknown[]): Promise<unknown> {
    // Trailing undefined arguments are left out; Go reads them as zero values.
    let n = args.length;
    while (n > 0 && args[n - 1] === undefined) n--;
    let res: Response;
    try {
      res = await deps.fetch(`${base}/bridge/${service}.${method}`, {
        method: "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "application/json", [CSRF_HEADER]: "1", ...sessionHeaders(storage) },
        body: JSON.stringify(args.slice(0, n)),
      });
    } catch {
      throw new ApiError(ErrNetwork, "Cannot reach the relay. Is it still running?");
    }
    if (!res.ok) {
      const err = await readError(res);
      if (res.status === 401 || err.code === ErrUnauthorized) deps.onUnauthorized?.();
      throw err;
    }
    const text = await res.text();
    if (!text) return null;
    try {
      return JSON.parse(text);
    } catch {
      throw new ApiError("invalid_response", "The relay sent an answer the dashboard cannot read.");
    }
  }

  // window.go.app.<Service>.<Method>: any name resolves to a bridge call.
  const services = new Map<string, Record<string, (...args: unknown[]) => Promise<unknown>>>();
  const app = new Proxy({} as Record<string, Record<string, (...args: unknown[]) => Promise<unknown>>>, {
    get(_t, service) {
      if (typeof service !== "string") return undefined;
      let svc = services.get(service);
      if (!svc) {
        svc = new Proxy({} as Record<string, (...args: unknown[]) => Promise<unknown>>, {
          get(_t2, method) {
            if (typeof method !== "string" || method === "then") return undefined;
            return (...args: unknown[]) => call(service, method, args);
          },
        });
        services.set(service, svc);
      }
      return svc;
    },
  });

  // Runtime events: local listeners, fed by the SSE stream for relay:change.
  const listeners = new Map<string, Listener[]>();
  let es: EventSourceLike | null = null;
  let connected = false;
  let retryTimer: unknown = null;
  let retryDelay = retryFirst;
  let closed = false;
  let opening = false;

  function dispatch(name: string, data: unknown[]) {
    const ls = listeners.get(name);
    if (!ls) return;
    for (const l of [...ls]) {
      if (l.remaining === 0) continue;
      if (l.remaining > 0) l.remaining--;
      try {
        l.cb(...data);
      } catch (e) {
        console.error("crosschat: event listener failed", e);
      }
    }
    listeners.set(
      name,
      ls.filter((l) => l.remaining !== 0),
    );
    if (!listeners.get(name)?.length) listeners.delete(name);
    if (name === CHANGE_EVENT) syncStream();
  }

  function setConnected(on: boolean) {
    if (connected === on) return;
    connected = on;
    dispatch(CONNECTION_EVENT, [on]);
  }

  function wantsStream() {
    return !closed && (listeners.get(CHANGE_EVENT)?.length ?? 0) > 0;
  }

  // openStream gets a one-time ticket when signed in with a session (the
  // stream cannot carry the header), then connects.
  function openStream() {
    const auth = sessionHeaders(storage);
    if (!auth[SESSION_HEADER]) {
      connect(`${base}/bridge/events`);
      return;
    }
    opening = true;
    void (async () => {
      let url = `${base}/bridge/events`;
      try {
        const res = await deps.fetch(`${base}/bridge/events/ticket`, { method: "POST", headers: { [CSRF_HEADER]: "1", ...auth } });
        if (res.ok) {
          const t = (await res.json()) as { ticket?: string };
          if (t && typeof t.ticket === "string") url += `?ticket=${encodeURIComponent(t.ticket)}`;
        }
      } catch {
        /* the relay is down: the stream fails and the reconnect loop retries */
      }
      opening = false;
      if (wantsStream() && !es) connect(url);
    })();
  }

  function connect(url: string) {
    const src = new deps.EventSource(url);
    es = src;
    src.addEventListener(CHANGE_EVENT, (ev: MessageEvent) => {
      let change: unknown;
      try {
        change = JSON.parse(String(ev.data));
      } catch {
        return;
      }
      dispatch(CHANGE_EVENT, [change]);
    });
    src.onopen = () => {
      retryDelay = retryFirst;
      setConnected(true);
      // Changes committed before this subscription (the first time) or while
      // disconnected are not in the stream: tell the stores to reload a
      // snapshot, as the native window does after falling behind.
      dispatch(CHANGE_EVENT, [{ type: "resync" }]);
    };
    src.onerror = () => {
      // The server ends the stream on purpose when a client falls behind;
      // reconnect ourselves (with backoff) and reload on open.
      src.close();
      if (es === src) es = null;
      setConnected(false);
      void checkSession();
      scheduleReconnect();
    };
  }

  async function checkSession() {
    try {
      const res = await deps.fetch(`${base}/bridge/session`, { credentials: "same-origin", headers: sessionHeaders(storage) });
      if (res.ok) {
        const s = (await res.json()) as { authenticated?: boolean };
        if (s && s.authenticated === false) deps.onUnauthorized?.();
      }
    } catch {
      /* the relay is down; the reconnect loop keeps trying */
    }
  }

  function scheduleReconnect() {
    if (retryTimer !== null || !wantsStream()) return;
    const delay = retryDelay;
    retryDelay = Math.min(retryDelay * 2, retryMax);
    retryTimer = setT(() => {
      retryTimer = null;
      if (wantsStream() && !es && !opening) openStream();
    }, delay);
  }

  function syncStream() {
    if (wantsStream()) {
      if (!es && retryTimer === null && !opening) openStream();
    } else if (es) {
      es.close();
      es = null;
      setConnected(false);
    }
  }

  function on(name: string, cb: (...data: unknown[]) => void, max: number) {
    const l: Listener = { cb, remaining: max };
    listeners.set(name, [...(listeners.get(name) ?? []), l]);
    if (name === CHANGE_EVENT) syncStream();
    return () => {
      const ls = (listeners.get(name) ?? []).filter((x) => x !== l);
      if (ls.length) listeners.set(name, ls);
      else listeners.delete(name);
      if (name === CHANGE_EVENT) syncStream();
    };
  }

  function off(...names: string[]) {
    for (const n of names) listeners.delete(n);
    syncStream();
  }

  async function clipboardWrite(text: string): Promise<boolean> {
    try {
      if (deps.clipboardWrite) await deps.clipboardWrite(text);
      else await navigator.clipboard.writeText(text);
      return true;
    } catch {
      return fallbackCopy(text);
    }
  }

  const implemented: Record<string, (...args: any[]) => any> = {
    EventsOnMultiple: (name: string, cb: (...d: unknown[]) => void, max: number) => on(name, cb, max),
    EventsOn: (name: string, cb: (...d: unknown[]) => void) => on(name, cb, -1),
    EventsOnce: (name: string, cb: (...d: unknown[]) => void) => on(name, cb, 1),
    EventsOff: (name: string, ...more: string[]) => off(name, ...more),
    EventsOffAll: () => off(...listeners.keys()),
    EventsEmit: (name: string, ...data: unknown[]) => dispatch(name, data),
    WindowSetTitle: (title: string) => (deps.setTitle ? deps.setTitle(title) : (document.title = title)),
    BrowserOpenURL: (url: string) => (deps.openURL ? deps.openURL(url) : window.open(url, "_blank", "noopener")),
    ClipboardSetText: clipboardWrite,
    ClipboardGetText: () => navigator.clipboard.readText(),
    Environment: () => Promise.resolve({ buildType: "production", platform: "browser", arch: "" }),
    LogPrint: (m: string) => console.log(m),
    LogTrace: (m: string) => console.debug(m),
    LogDebug: (m: string) => console.debug(m),
    LogInfo: (m: string) => console.info(m),
    LogWarning: (m: string) => console.warn(m),
    LogError: (m: string) => console.error(m),
    LogFatal: (m: string) => console.error(m),
    WindowIsFullscreen: () => Promise.resolve(false),
    WindowIsMaximised: () => Promise.resolve(false),
    WindowIsMinimised: () => Promise.resolve(false),
    WindowIsNormal: () => Promise.resolve(true),
    WindowGetSize: () => Promise.resolve({ w: window.innerWidth, h: window.innerHeight }),
    WindowGetPosition: () => Promise.resolve({ x: 0, y: 0 }),
    ScreenGetAll: () => Promise.resolve([]),
    CanResolveFilePaths: () => false,
  };
  // Window management has no meaning in a tab: the rest are no-ops.
  const runtime = new Proxy(implemented, {
    get(t, name) {
      if (typeof name !== "string") return undefined;
      return t[name] ?? (() => undefined);
    },
  });

  return {
    go: { app },
    runtime,
    close() {
      closed = true;
      listeners.clear();
      if (retryTimer !== null) clearT(retryTimer);
      retryTimer = null;
      es?.close();
      es = null;
    },
  };
}

function fallbackCopy(text: string): boolean {
  try {
    const ta = document.createElement("textarea");
    ta.value = text;
    ta.setAttribute("readonly", "");
    ta.style.position = "fixed";
    ta.style.opacity = "0";
    document.body.appendChild(ta);
    ta.select();
    const ok = document.execCommand("copy");
    ta.remove();
    return ok;
  } catch {
    return false;
  }
}

/** Session endpoints of the bridge (browser only; the window needs none). */
export interface SessionState {
  authenticated: boolean;
  version?: string;
}

export function createSessionClient(fetchFn: BridgeDeps["fetch"], base = "", storage: SessionStorageLike | undefined = defaultStorage()) {
  function keep(value: string | null) {
    try {
      if (value) storage?.setItem(SESSION_KEY, value);
      else storage?.removeItem(SESSION_KEY);
    } catch {
      /* storage disabled */
    }
  }
  async function send(method: string, body?: unknown): Promise<SessionState> {
    let res: Response;
    const auth = sessionHeaders(storage);
    try {
      res = await fetchFn(`${base}/bridge/session`, {
        method,
        credentials: "same-origin",
        headers: body === undefined ? { [CSRF_HEADER]: "1", ...auth } : { "Content-Type": "application/json", [CSRF_HEADER]: "1", ...auth },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch {
      throw new ApiError(ErrNetwork, "Cannot reach the relay. Is it still running?");
    }
    if (!res.ok) throw await readError(res);
    const { session, ...state } = (await res.json()) as SessionState & { session?: string };
    if (method === "POST" && session) keep(session);
    if (method === "DELETE" || (method === "GET" && state.authenticated === false)) keep(null);
    return state;
  }
  return {
    get: () => send("GET"),
    signIn: (token: string) => send("POST", { token }),
    signOut: () => send("DELETE"),
  };
}
