import { ref, type Ref } from "vue";

/** now ticks every second: leases, presence and "ago" texts follow it. */
export const now: Ref<number> = ref(Date.now());
let timer: ReturnType<typeof setInterval> | null = null;

export function startClock(intervalMs = 1000) {
  if (timer) return;
  timer = setInterval(() => (now.value = Date.now()), intervalMs);
}

export function stopClock() {
  if (timer) clearInterval(timer);
  timer = null;
}
