import { createApp } from "vue";
import App from "./App.vue";
import { api, installShim } from "./api";
import { STORES, createStores } from "./stores";
import "./style.css";

// In a browser (served by `crosschat-relay serve`) there is no Wails runtime:
// define window.go and window.runtime on top of the HTTP bridge first.
installShim();
createApp(App).provide(STORES, createStores(api)).mount("#app");
