import { afterEach, describe, expect, it } from "vitest";
import { flushPromises } from "@vue/test-utils";
import SettingsPage from "./SettingsPage.vue";
import { withStores } from "../test/mount";

afterEach(() => {
  document.body.innerHTML = "";
});

describe("Settings: hand-off limit", () => {
  it("says what is wrong with a value in its own words, and forgets it once the value changes", async () => {
    const { mount: m } = await withStores({ settings: { maxChainDepth: 3, workersPaused: false } });
    const w = m(SettingsPage);
    await flushPromises();
    const input = w.get<HTMLInputElement>("#depth");
    const form = input.element.form!;
    // The app checks, not the browser (its tooltip came for 99, the app's message for 2.5).
    expect(form.noValidate).toBe(true);
    for (const bad of ["99", "2.5", ""]) {
      await input.setValue(bad);
      form.dispatchEvent(new Event("submit"));
      await flushPromises();
      expect(w.text()).toContain("Choose a whole number from 0 to 10.");
    }
    // The saved value typed again: Save is off, so the error must go by itself.
    await input.setValue("3");
    await flushPromises();
    expect(w.text()).not.toContain("Choose a whole number");
    w.unmount();
  });
});
