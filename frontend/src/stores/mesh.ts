// The Mesh page's data: Mesh.Status and Mesh.Agents, read again every few
// seconds while the page is open (lag and outbox depth are not pushed).
import { computed, reactive } from "vue";
import { errorMessage, type Agent, type Api, type MeshAgent, type MeshRelay, type MeshSettings, type MeshStatus } from "../api";

export const MESH_POLL_MS = 5000;

export interface MeshState {
  status: MeshStatus | null;
  agents: MeshAgent[];
  error: string;
  loading: boolean;
  /**
   * busy is the id of the relay being trusted or blocked, or slug@relay-id
   * of a plain name being given ("" when none).
   */
  busy: string;
}

/** createMesh loads the mesh for the page; start() polls until stop(). */
export function createMesh(api: Api, pollMs = MESH_POLL_MS) {
  const state = reactive<MeshState>({ status: null, agents: [], error: "", loading: false, busy: "" });
  let timer: ReturnType<typeof setInterval> | undefined;

  async function load() {
    state.loading = true;
    try {
      const status = await api.mesh.status();
      state.status = status;
      state.agents = status.enabled ? await api.mesh.agents() : [];
      state.error = "";
    } catch (e) {
      state.error = errorMessage(e);
    } finally {
      state.loading = false;
    }
  }

  /** agentsByRelay groups the directory's agents under their relay's name. */
  const agentsByRelay = computed(() => {
    const out = new Map<string, MeshAgent[]>();
    for (const a of [...state.agents].sort((x, y) => x.slug.localeCompare(y.slug))) {
      const list = out.get(a.relay) ?? [];
      list.push(a);
      out.set(a.relay, list);
    }
    return out;
  });

  /**
   * setTrust trusts (pinning the key of fingerprint, the one the page
   * showed) or blocks a relay by id, then reads the mesh again.
   */
  async function setTrust(relayId: string, trust: boolean, fingerprint = "") {
    state.busy = relayId;
    try {
      await (trust ? api.mesh.trust(relayId, fingerprint) : api.mesh.block(relayId));
      state.error = "";
      await load();
    } catch (e) {
      state.error = errorMessage(e);
    } finally {
      state.busy = "";
    }
  }

  /**
   * giveName gives the plain name slug to relay relayId's agent of that
   * slug, then reads the mesh again.
   */
  async function giveName(slug: string, relayId: string) {
    state.busy = `${slug}@${relayId}`;
    try {
      await api.mesh.giveName(slug, relayId);
      state.error = "";
      await load();
    } catch (e) {
      state.error = errorMessage(e);
    } finally {
      state.busy = "";
    }
  }

  return {
    state,
    agentsByRelay,
    load,
    giveName,
    trust: (relayId: string, fingerprint: string) => setTrust(relayId, true, fingerprint),
    block: (relayId: string) => setTrust(relayId, false),
    start() {
      void load();
      if (!timer && pollMs > 0) timer = setInterval(() => void load(), pollMs);
    },
    stop() {
      if (timer) clearInterval(timer);
      timer = undefined;
    },
  };
}

/** linkText says the link to NATS in plain words. */
export function linkText(s: MeshStatus): string {
  if (!s.enabled) return "Not joined";
  switch (s.link) {
    case "connected":
      return s.ready ? "Connected" : "Connected, setting up";
    case "connecting":
      return "Connecting";
    case "reconnecting":
      return "Reconnecting";
    default:
      return "Disconnected";
  }
}

/**
 * remoteRelay is the relay an agent lives on when that is another relay
 * than this one ("" for a local agent or outside a mesh). This relay's name
 * is the operator's relay: the operator is always local.
 */
export function remoteRelay(a: Pick<Agent, "relay"> | undefined, selfRelay: string | undefined): string {
  if (!a?.relay || !selfRelay || a.relay === selfRelay) return "";
  return a.relay;
}

/** parseUrls reads the NATS URLs field: commas, spaces or new lines between them. */
export function parseUrls(text: string): string[] {
  return text
    .split(/[\s,]+/)
    .map((u) => u.trim())
    .filter(Boolean);
}

/** sameSettings compares two mesh settings field by field. */
export function sameSettings(a: MeshSettings, b: MeshSettings): boolean {
  return (
    a.urls.join(",") === b.urls.join(",") &&
    a.creds === b.creds &&
    a.nkey === b.nkey &&
    a.tlsCa === b.tlsCa &&
    a.embed === b.embed &&
    a.name === b.name &&
    !!a.strict === !!b.strict
  );
}

/**
 * relayMarker returns, for a slug, the name of the other relay that agent
 * lives on ("" for local agents and outside a mesh), judged from the relay
 * store's agents: this relay is the operator's.
 */
export function relayMarker(agents: Map<string, Agent>, operatorSlug: string): (slug: string) => string {
  const self = agents.get(operatorSlug)?.relay;
  return (slug) => remoteRelay(agents.get(slug), self);
}

/**
 * RelayAction is one button of a relay's row: trust the key of fingerprint,
 * or block the relay when fingerprint is null.
 */
export interface RelayAction {
  label: string;
  aria: string;
  test: string;
  fingerprint: string | null;
  disabled: boolean;
}

/**
 * relayActions lists the buttons a relay's row offers: trust the key shown
 * (until trusted; only once a key is known), trust a changed key, and
 * block (until blocked). This relay itself gets none.
 */
export function relayActions(r: MeshRelay): RelayAction[] {
  if (r.self) return [];
  const out: RelayAction[] = [];
  if (r.state !== "trusted") {
    out.push({ label: "Trust", aria: `Trust ${r.name}`, test: "relay-trust-btn", fingerprint: r.fingerprint, disabled: !r.fingerprint });
  }
  if (r.newFingerprint) {
    out.push({ label: "Trust new key", aria: `Trust the new key of ${r.name}`, test: "relay-trust-new-btn", fingerprint: r.newFingerprint, disabled: false });
  }
  if (r.state !== "blocked") {
    out.push({ label: "Block", aria: `Block ${r.name}`, test: "relay-block-btn", fingerprint: null, disabled: false });
  }
  return out;
}

/** trustText says a relay's admission state in plain words. */
export function trustText(state: string, self: boolean): string {
  if (self) return "Own key";
  switch (state) {
    case "trusted":
      return "Trusted";
    case "blocked":
      return "Blocked";
    default:
      return "Pending approval";
  }
}

/** heldReasonText says why a held task waits. */
export function heldReasonText(reason: string): string {
  switch (reason) {
    case "untrusted":
      return "Waits until the relay is trusted";
    case "blocked":
      return "Relay blocked: never delivered";
    case "version":
      return "Newer version: read after an upgrade";
    case "key-change":
      return "The relay shows another key: waits until you confirm one";
    case "renamed":
      return "The relay renamed itself: waits until you trust it again";
    default:
      return reason;
  }
}
