// Package benchrun runs `crosschat-relay bench`: it starts the relays the
// bench measures and drives the load generator (internal/bench) against
// them. Without a relay to point at it starts one relay in a temporary data
// folder on the disk and one in tmpfs, each a child process of this same
// executable (so CPU time and memory are the relay's alone), round after
// round, interleaved; or one relay inside this process; or two child relays
// in one mesh (NATS inside the first, the second joining with an invite). It
// also serves those children's side: a child relay that answers the
// parent's samples and profiling requests on its input (ServeChild), and
// the do-nothing floor service the wake-up is compared with (ServeFloor).
//
// The children are this executable re-run as `bench` with hidden flags
// (--relay-child, --floor-child, --mesh-embed, --mesh-join, --cpuprofile):
// package app/cli reads them, as every flag of the verb, and calls
// ServeChild or ServeFloor; Run is the parent's side.
package benchrun
