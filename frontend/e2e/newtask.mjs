// The New task dialog as the e2e scenarios use it: dashboard.mjs and
// workers.mjs both post tasks through it.

/**
 * sendTask opens the New task dialog from the Tasks page, fills in the
 * recipient, title and instructions, sends it and waits until the dialog has
 * closed (the relay accepted the task).
 */
export async function sendTask(page, { recipient, title, instructions }) {
  await page.getByRole("button", { name: "New task" }).click();
  const dlg = page.getByRole("dialog", { name: "New task" });
  await dlg.getByLabel("Recipient").selectOption(recipient);
  await dlg.getByLabel("Title").fill(title);
  await dlg.getByLabel("Instructions").fill(instructions);
  await dlg.getByRole("button", { name: "Send task" }).click();
  await dlg.waitFor({ state: "detached" });
}
