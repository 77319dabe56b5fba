import { createApp } from "vue";
import App from "./App.vue";
import { api, installShim } from "./api";
import { STORES, createStores } from "./stores";
import { installSelfTest } from "./lib/selftest";
import "./style.css";

// The native window's self-test hook (CI), before the shim below: only the
// Wails runtime has defined window.go by now.
installSelfTest();
// In a browser (served by `crosschat-relay serve`) there is no Wails runtime:
// define window.go and window.runtime on top of the HTTP bridge first.
installShim();
createApp(App).provide(STORES, createStores(api)).mount("#app");
