// Package cli runs the crosschat-relay binary's verbs (everything but the
// window and `serve`, which stay in package app): one file a verb, named
// for it (TestOneFileAVerb; `bench`'s relays are package app/benchrun's);
// command.go is what every verb shares, dispatch.go the table that runs
// them. Most verbs talk to a running relay over its bridge
// (internal/client); the rest read this computer's files. It builds on
// package app, which never imports it.
package cli
