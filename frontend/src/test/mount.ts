import { TeleportStub, mount, type ComponentMountingOptions } from "@vue/test-utils";
import { ref } from "vue";
import type { Component } from "vue";
import { STORES, type Stores } from "../stores";
import { createRelayStore } from "../stores/relay";
import { createToasts } from "../stores/toasts";
import { T0, fakeApi, type FakeApi } from "./fakes";

/** withStores mounts a component with a fake api behind real stores, snapshot loaded. */
export async function withStores(data: Parameters<typeof fakeApi>[0] = {}) {
  const api: FakeApi = fakeApi(data);
  const toasts = createToasts({ timeoutMs: 0 });
  const now = ref(T0);
  const relay = createRelayStore(api, { now, toasts });
  await relay.start();
  const stores: Stores = { api, relay, toasts };
  function mountIt<C extends Component>(c: C, opts: ComponentMountingOptions<C> = {} as ComponentMountingOptions<C>) {
    return mount(c, {
      ...opts,
      attachTo: document.body,
      // TeleportStub keeps a dialog's elements while its parent re-renders, as
      // Teleport does (the default stub remounts them behind the focus stack).
      global: { provide: { [STORES as symbol]: stores }, stubs: { Teleport: TeleportStub } },
    } as ComponentMountingOptions<C>);
  }
  return { api, toasts, relay, now, mount: mountIt };
}
