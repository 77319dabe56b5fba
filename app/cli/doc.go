// Package cli runs the crosschat-relay binary's verbs (everything but the
// window and `serve`, which stay in package app): one file per verb or
// verb group, and `bench` with its child relays. Most verbs talk to a
// running relay over its bridge (internal/client); the rest read this
// computer's files. It builds on package app, which never imports it.
package cli
