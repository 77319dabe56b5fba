// One submit helper for the dialogs and forms: the busy flag that disables the
// button, the relay's refusal shown in the form, and "touched" so field errors
// appear only after the first attempt.
import { ref, type Ref } from "vue";
import { errorMessage } from "../api";

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
