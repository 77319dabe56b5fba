// End to end, workers: Connect → Agents on this computer with "Other
// command-line agent" (a shell script this test writes), its worker picks up
// a task sent from the New task dialog, the task page shows the live run and
// the files it made with a picture preview, and the card ends in Done.
// Run by e2e/dashboard.mjs after its own scenario, on the same relay and page.
import { chmodSync, existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { say, check } from "./lib.mjs";
import { sendTask } from "./newtask.mjs";

// A 32×32 PNG: a blue disc with a teal ring on a transparent background.
const PNG_B64 =
  "iVBORw0KGgoAAAANSUhEUgAAACAAAAAgCAYAAABzenr0AAAAdUlEQVR42mNgGAVDDYgtnvIfHx4wi2nmEGyGW8WcwYqp7hBiLCXGMXS3nGJHUMNyihxBLcvRHTEglpPsiAF1ADXjnqy0QCvLiQ6FUQeMOmDQOGDAsuFoSTgoKqNBUR0PeINkUDTJBkWjdFA0ywdNx2QU0AoAAIY7+A15WJY7AAAAAElFTkSuQmCC";

const ANSWER = "Wrote made-by-run.txt and pixel.png in the working folder.";

/** The agent program: reads the prompt file ($1), prints, makes two files, answers in the result file ($2). */
function script() {
  return `#!/bin/sh
set -e
prompt="$1"
result="$2"
echo "Reading the task from $(basename "$prompt")"
test -s "$prompt"
echo "The prompt has $(wc -l < "$prompt" | tr -d ' ') lines"
sleep 1
echo "Writing made-by-run.txt"
printf 'Made by the Crosschat worker e2e run.\\n' > made-by-run.txt
echo "Drawing pixel.png"
printf '%s' '${PNG_B64}' | base64 -d > pixel.png
sleep 1
echo "${ANSWER}"
printf '%s\\n' "${ANSWER}" > "$result"
`;
}

/** runWorkers runs the scenario on page, signed in; run is the e2eRun (lib.mjs) it reports its steps to. */
export async function runWorkers({ page, run, shot }) {
  const { tmp } = run;
  const bin = join(tmp, "agent-bin");
  const work = join(tmp, "agent-work");
  mkdirSync(bin, { recursive: true });
  mkdirSync(work, { recursive: true });
  const program = join(bin, "e2e-agent.sh");
  writeFileSync(program, script());
  chmodSync(program, 0o755);
  const nav = (name) => page.getByRole("navigation", { name: "Main" }).getByRole("link", { name }).click();

  run.step = "workers: Connect → Agents on this computer";
  await page.setViewportSize({ width: 1280, height: 800 });
  await nav("Connect");
  const local = page.locator('[data-test="local-agents"]');
  await local.getByRole("heading", { name: "Agents on this computer" }).waitFor();
  const other = local.locator('[data-harness="custom"]');
  await other.waitFor({ timeout: 10000 });
  check((await local.locator("[data-harness]").count()) >= 2, "Agents on this computer lists fewer than two cards");
  await shot(page, "11-connect-local");

  run.step = "workers: connect dialog";
  await other.getByRole("button", { name: "Connect" }).click();
  const dlg = page.getByRole("dialog", { name: "Connect another command-line agent" });
  await dlg.waitFor();
  await dlg.getByRole("button", { name: "Connect" }).click();
  await dlg.getByText("Choose the program to run.").waitFor(); // checked before any request
  await dlg.getByText("Choose the folder it works in.").waitFor();
  check((await dlg.getByRole("button", { name: "Choose…" }).count()) === 0, "a browser shows the native picker button");
  const slug = (await dlg.getByLabel("Slug").inputValue()).trim();
  check(/^custom-[a-z0-9]/.test(slug), `default slug is not custom-<hostname>: ${slug}`);
  await dlg.getByLabel("Display name").fill("Build bot");
  await dlg.getByLabel("Role").fill("Runs small build chores on this computer.");
  await dlg.getByLabel("Program", { exact: true }).fill(program);
  check((await dlg.getByLabel(/Arguments/).inputValue()) === "{prompt_file}", "custom args do not default to {prompt_file}");
  await dlg.getByLabel(/Arguments/).fill("{prompt_file}\n{result_file}");
  await dlg.getByLabel("Working folder", { exact: true }).fill(work);
  check(await dlg.getByRole("checkbox", { name: /Only this worker/ }).isChecked(), "only-this-worker is not on by default");
  check(await dlg.getByRole("group", { name: "Takes tasks from" }).getByRole("checkbox", { name: /You/ }).isChecked(), "the operator is not an allowed sender by default");
  check((await dlg.getByLabel("Time limit").inputValue()) === "30", "time limit does not default to 30");
  check((await dlg.getByLabel("Runs per hour").inputValue()) === "20", "runs per hour does not default to 20");
  await dlg.getByLabel(/Environment variables/).fill("CROSSCHAT_E2E_KEY, OTHER_KEY");
  await dlg.locator('[data-test="safety"]').waitFor();
  await page.setViewportSize({ width: 1280, height: 1000 }); // the whole dialog, as in a taller window
  await shot(page, "12-connect-dialog");
  await page.setViewportSize({ width: 1280, height: 800 });
  await dlg.getByRole("button", { name: "Connect", exact: true }).click();
  const result = page.getByRole("dialog", { name: "Connected Build bot" }).locator('[data-test="connect-result"]');
  await result.waitFor({ timeout: 15000 });
  await result.getByText("Worker started in").waitFor();
  await result.locator('[data-test="token"]').waitFor(); // custom: the snippet and the token, shown once
  check(/^cca_/.test(await result.locator('[data-test="token"]').innerText()), "connect result shows no token");
  await shot(page, "13-connect-result");
  await page.getByRole("dialog", { name: "Connected Build bot" }).getByRole("button", { name: "Done" }).click();
  say(`connected ${slug} with a worker in ${work}`);

  run.step = "workers: agent card with its worker";
  await nav("Agents");
  const card = page.locator(`[data-agent="${slug}"]`);
  await card.locator('[data-test="worker-line"]').getByText("Listening").waitFor({ timeout: 15000 });
  await page.getByRole("button", { name: "Pause all workers" }).waitFor();
  await card.getByRole("button", { name: "Worker settings…" }).click();
  const wd = page.getByRole("dialog", { name: "Worker for Build bot" });
  await wd.locator('[data-test="worker-form"]').waitFor();
  await wd.getByLabel("Working folder", { exact: true }).waitFor();
  check((await wd.getByLabel("Working folder", { exact: true }).inputValue()) === work, "the worker form does not show the saved working folder");
  const env = await wd.getByLabel(/Environment variables/).inputValue();
  check(env === "CROSSCHAT_E2E_KEY OTHER_KEY", `the worker form shows environment names ${JSON.stringify(env)}, not the saved ones`);
  await page.setViewportSize({ width: 1280, height: 1000 });
  await shot(page, "14-worker-form");
  await page.setViewportSize({ width: 1280, height: 800 });
  await wd.getByRole("button", { name: "Cancel" }).click();
  await wd.waitFor({ state: "detached" });
  say("agent card shows the worker listening; worker form opens with its settings");

  run.step = "workers: post a task to the worker";
  await nav("Tasks");
  await sendTask(page, {
    recipient: slug,
    title: "Make the release artifacts",
    instructions: "Write made-by-run.txt and a small picture into the working folder.",
  });
  const taskCard = page.locator("[data-task-id]").filter({ hasText: "Make the release artifacts" }).first();
  await taskCard.waitFor();
  const taskId = await taskCard.getAttribute("data-task-id");

  run.step = "workers: live run view";
  await taskCard.click();
  const drawer = page.getByRole("dialog", { name: "Make the release artifacts" });
  await drawer.waitFor();
  const runView = drawer.locator('[data-test="run-view"]');
  await runView.locator('[data-kind="start"]').waitFor({ timeout: 20000 });
  await runView.getByText("Reading the task from").waitFor({ timeout: 10000 });
  if ((await runView.getAttribute("data-state")) === "running") {
    await shot(page, "15-task-run-live");
    say("run view streaming while the worker runs");
  }
  await runView.locator('[data-test="run-state"]').getByText("Finished").waitFor({ timeout: 30000 });
  await runView.getByText("Drawing pixel.png").waitFor();
  await runView.locator('[data-kind="end"][data-status="ok"]').waitFor();

  run.step = "workers: changed files";
  const files = drawer.locator('[data-test="changed-files"]');
  await files.locator(`[data-path$="/made-by-run.txt"]`).getByText("Added").waitFor({ timeout: 10000 });
  await files.locator(`[data-path$="/pixel.png"]`).waitFor();
  // Previews load as their row scrolls into view; where the row starts
  // depends on how the drawer's text wraps (the date, the temp path).
  await files.locator(`[data-path$="/pixel.png"]`).scrollIntoViewIfNeeded();
  const img = files.locator(`[data-path$="/pixel.png"] img`);
  await img.waitFor({ timeout: 10000 });
  check(await img.evaluate((el) => el.complete && el.naturalWidth === 32), "the picture preview did not load");
  check(existsSync(join(work, "made-by-run.txt")), "the worker did not write made-by-run.txt");

  run.step = "workers: task done with the answer";
  await drawer.locator('[data-test="result"]').getByText(ANSWER).waitFor({ timeout: 10000 });
  await drawer.locator('[data-test="changed-files"]').scrollIntoViewIfNeeded();
  await shot(page, "16-task-run-files");
  await drawer.locator('[data-test="run-view"]').scrollIntoViewIfNeeded();
  await page.locator(".dlg-body").first().evaluate((el) => (el.scrollTop = 0));
  await shot(page, "17-task-run-done");
  await page.keyboard.press("Escape");
  await drawer.waitFor({ state: "detached" });
  await page.locator(`[data-column="done"] [data-task-id="${taskId}"]`).waitFor({ timeout: 10000 });
  await nav("Agents");
  await card.locator('[data-test="worker-line"]').getByText("Listening").waitFor({ timeout: 15000 });
  await shot(page, "18-agents-workers");
  say(`worker ran task ${taskId}: steps live, two files with a preview, Done with the answer`);
}
