// src/api is the only place in the frontend that imports the generated Wails
// bindings (../../wailsjs/go/* and ../../wailsjs/runtime). Components import
// from here, never from wailsjs directly, so the browser bridge shim and the
// native window share one seam.
//
// Nothing is bound yet: the dashboard arrives in a later release.
export {};
