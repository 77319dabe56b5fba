import { inject, type InjectionKey } from "vue";
import type { Api } from "../api";
import { createRelayStore, type RelayStore } from "./relay";
import { createToasts, type Toasts } from "./toasts";
import { now } from "./clock";

export interface Stores {
  api: Api;
  relay: RelayStore;
  toasts: Toasts;
}

export const STORES: InjectionKey<Stores> = Symbol("stores");

export function createStores(api: Api): Stores {
  const toasts = createToasts();
  return { api, toasts, relay: createRelayStore(api, { now, toasts }) };
}

/** useStores gives components the app's stores (provided by main.ts, or by a test). */
export function useStores(): Stores {
  const s = inject(STORES);
  if (!s) throw new Error("stores not provided");
  return s;
}
