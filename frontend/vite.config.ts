import { defineConfig } from "vitest/config";
import vue from "@vitejs/plugin-vue";

// Wails serves frontend/dist inside the webview in production and proxies
// the Vite dev server (wails.json: frontend:dev:serverUrl "auto") in dev.
export default defineConfig({
  plugins: [vue()],
  build: {
    outDir: "dist",
    emptyOutDir: true,
    target: "es2022",
    chunkSizeWarningLimit: 1024,
  },
  test: {
    include: ["src/**/*.test.ts"],
    environment: "happy-dom",
  },
});
