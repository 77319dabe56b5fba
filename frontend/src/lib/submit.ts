// One submit helper for the dialogs and forms: the busy flag that disables the
// button, the relay's refusal shown in the form, and "touched" so field errors
// appear only after the first attempt.
import { computed, nextTick, ref, type ComputedRef, type Ref } from "vue";
import { errorMessage } from "../api";
import { firstControl } from "./focus";

/** Submit is a form's submit state and the function that runs its action. */
export interface Submit {
  /** True while an action runs; a second run meanwhile does nothing. */
  busy: Ref<boolean>;
  /** The last action's error message, "" when none. */
  error: Ref<string>;
  /** True once a checked run was attempted: field errors may show. */
  touched: Ref<boolean>;
  /**
   * run clears the error and runs action unless one is running already. With
   * invalid, the form is marked touched first and nothing runs while invalid()
   * is true. It resolves true when the action succeeded; a failure is shown in
   * error, never thrown.
   */
  run(action: () => Promise<unknown>, invalid?: () => boolean): Promise<boolean>;
}

/** useSubmit gives a form its submit state. Several actions of one form (save, remove) may share it. */
export function useSubmit(): Submit {
  const busy = ref(false);
  const error = ref("");
  const touched = ref(false);
  async function run(action: () => Promise<unknown>, invalid?: () => boolean): Promise<boolean> {
    if (busy.value) return false;
    if (invalid) touched.value = true;
    error.value = "";
    if (invalid?.()) return false;
    busy.value = true;
    try {
      await action();
      return true;
    } catch (e) {
      error.value = errorMessage(e);
      return false;
    } finally {
      busy.value = false;
    }
  }
  return { busy, error, touched, run };
}

/** hasErrors tells whether a validation result names any field. */
export function hasErrors(e: object): boolean {
  return Object.keys(e).length > 0;
}

/** FieldRefusal is a relay refusal that names one of a form's fields. */
export interface FieldRefusal {
  field: string;
  message: string;
}

/**
 * fieldRefusal reads a relay refusal written "field: message" (the relay's
 * form for what it checks) naming one of fields, so the form can show it at
 * that field; null for any other message.
 */
export function fieldRefusal(error: string, fields: readonly string[]): FieldRefusal | null {
  const m = /^([A-Za-z.]+): (.+)$/s.exec(error);
  if (!m || !fields.includes(m[1])) return null;
  return { field: m[1], message: m[2].charAt(0).toUpperCase() + m[2].slice(1) };
}

/**
 * atField shows a relay refusal that names one of fields at that field:
 * refusal is it (null for none), with(errors) adds it to a form's own field
 * errors, and reveal(form) focuses the field after a failed run, so a
 * refusal at the bottom of a long form is seen. A field's control is the
 * element marked data-field="<name>" in the form, or the first control
 * inside it (a group of checkboxes). inBox is what the form's general box
 * shows: any other error, and a refusal whose field the form does not show
 * now (a preset program's arguments, the worker of a connect without one).
 */
export function atField(error: Ref<string>, fields: readonly string[]) {
  const refusal: ComputedRef<FieldRefusal | null> = computed(() => fieldRefusal(error.value, fields));
  // The refusal reveal found no control for, so the box shows it.
  const unplaced = ref("");
  const inBox = computed(() => (!refusal.value || unplaced.value === error.value ? error.value : ""));
  function withErrors<E extends object>(errors: E): E {
    const r = refusal.value;
    return r ? { ...errors, [r.field]: r.message } : errors;
  }
  async function reveal(form: HTMLElement | null | undefined) {
    unplaced.value = "";
    const r = refusal.value;
    if (!r) return;
    await nextTick();
    const el = form?.querySelector<HTMLElement>(`[data-field="${r.field}"]`);
    const control = el ? firstControl(el) : undefined;
    if (control) control.focus();
    else unplaced.value = error.value;
  }
  return { refusal, inBox, withErrors, reveal };
}
