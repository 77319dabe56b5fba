import { join } from "node:path";
import { say, freePort, adminToken, openPage, e2eRun } from "./lib.mjs";
import { runInsights } from "./insights.mjs";
const run = e2eRun({ script: "zz-dev.mjs", tmpPrefix: "ccr-dev-", logName: "dev-relay.log" });
const { bin, out: OUT, tmp } = run;
const dataDir = join(tmp, "data");
async function shot(page, name) {
  await page.waitForTimeout(200);
  await page.screenshot({ path: join(OUT, `${name}.png`) });
  say(`screenshot ${name}`);
}
async function main() {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  await run.startRelay(["--port", String(port), "--data-dir", dataDir], base);
  const token = adminToken(bin, dataDir);
  const browser = await run.launch();
  const { page } = await openPage(browser, base);
  const errs = [];
  page.on("console", (m) => m.type() === "error" && errs.push(m.text()));
  page.on("pageerror", (e) => errs.push(String(e)));
  await page.goto(base + "/");
  await page.getByLabel("Admin token").fill(token);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("heading", { name: "Tasks", level: 1 }).waitFor();
  await runInsights({ page, run, base, port, dataDir, shot, dark: async () => {
    const session = await page.evaluate(() => sessionStorage.getItem("crosschat.session"));
    const c = await browser.newContext({ viewport: { width: 1280, height: 800 }, colorScheme: "dark" });
    await c.addInitScript((v) => sessionStorage.setItem("crosschat.session", v), session);
    return c.newPage();
  } });
  if (errs.length) throw new Error(errs.join("\n"));
}
run.finish("dev", main, { failureShot: "dev-failure.png", tailLines: 20 });
