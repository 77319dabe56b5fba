import { reactive } from "vue";

export interface Toast {
  id: number;
  kind: "success" | "warning" | "error" | "info";
  title: string;
  body?: string;
  taskId?: string;
}

export function createToasts(opts: { timeoutMs?: number } = {}) {
  const list = reactive<Toast[]>([]);
  let next = 1;
  function dismiss(id: number) {
    const i = list.findIndex((t) => t.id === id);
    if (i >= 0) list.splice(i, 1);
  }
  function push(t: Omit<Toast, "id">): number {
    const id = next++;
    list.push({ ...t, id });
    while (list.length > 5) list.shift();
    const ms = opts.timeoutMs ?? (t.kind === "error" ? 12000 : t.kind === "info" ? 4000 : 10000);
    if (ms > 0) setTimeout(() => dismiss(id), ms);
    return id;
  }
  return { list, push, dismiss };
}

export type Toasts = ReturnType<typeof createToasts>;
