// Package mesh federates relays over NATS JetStream: a directory of relays
// and agents in a KV bucket, a publisher that sends the store's outbox to a
// stream with de-duplication ids, a durable consumer per relay that applies
// what arrives idempotently and acknowledges after the commit, and Ed25519
// envelope signatures. It is the only importer of nats.go and nats-server.
package mesh

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Names on the NATS side.
const (
	StreamName    = "CROSSCHAT_MESH"
	subjectPrefix = "crosschat.mesh."
	BucketName    = "crosschat_directory"
)

// Defaults for Options.
const (
	DefaultRefresh = 60 * time.Second
	opTimeout      = 5 * time.Second
	// streamMaxAge is how long the stream keeps a message; applied ids are
	// remembered twice as long, so any redelivery is recognised.
	streamMaxAge = 14 * 24 * time.Hour
)

// ackWait is how long NATS waits for the consumer to acknowledge a message
// before it delivers it again (a variable for tests).
var ackWait = 30 * time.Second

// Options configure Start.
type Options struct {
	// URLs are NATS server URLs; empty with Embed set uses the embedded server.
	URLs []string
	// CredsFile, NKeyFile and TLSCAFile are optional client credentials.
	CredsFile, NKeyFile, TLSCAFile string
	// Embed, when set (HOST:PORT), runs a NATS server with JetStream in this
	// process, storing in DataDir/nats.
	Embed string
	// DataDir holds the relay identity, its key and the embedded server's store.
	DataDir string
	// Name is the relay's name in the directory; default the stored one, else the host name.
	Name string
	// Address is what the directory shows as this relay's address (its MCP URL).
	Address string
	// Replicas is the stream and bucket replica count (1 for one server, 3 for a cluster).
	Replicas int
	// Store is the relay's database.
	Store relay.MeshStore
	// Changes subscribes to the store's committed changes (kicks the publisher
	// and re-advertises changed agents).
	Changes func(buffer int) (<-chan relay.Change, func())
	// Refresh is how often the directory entries are written again; their
	// TTL is three times as long. Default DefaultRefresh.
	Refresh time.Duration
	// TrustAccount makes the NATS account the trust boundary
	// (--mesh-trust account): every relay seen is trusted at once, and a
	// changed key is taken with a warning. By default each relay waits for
	// the operator's approval.
	TrustAccount bool
	// EmbedOpen lets anonymous clients into the embedded server with every
	// permission (--nats-embed-open); by default it admits only the relays
	// invited or trusted, each confined to its own subjects (admit.go).
	EmbedOpen bool
	// Strict refuses to join with a NATS credential that can delete or
	// purge what the mesh keeps (--nats-strict): Start connects and checks
	// it before returning.
	Strict bool
	Logger *slog.Logger
	// Now is the clock the replay window is judged by (tests move it); default time.Now.
	Now func() time.Time
}

// Node is one relay's membership of the mesh.
type Node struct {
	opts Options
	id   Identity
	log  *slog.Logger
	srv  *server.Server
	nc   *nats.Conn

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	kick   chan struct{}
	ready  chan struct{}

	// syncMu makes one syncAgents at a time: each computes the remote
	// agents and writes them to the store under it, so an older view can
	// never be written after a newer one.
	syncMu sync.Mutex

	mu   sync.Mutex
	js   jetstream.JetStream
	kv   jetstream.KeyValue
	cons jetstream.Consumer
	// dirNext is the directory revision to read on from, under dirMu,
	// which one read of the directory holds at a time.
	dirMu   sync.Mutex
	dirNext uint64
	dirRead atomic.Int64        // when the last read of it began (Unix ns)
	agents  map[string]dirAgent // the bucket's agent entries by key, as written
	good    map[string]dirAgent // the accepted ones: this relay's and trusted relays', signed
	// names are the remote agents' names here (name → relay and slug),
	// byAgent the same the other way (relay id/slug → name), contests the
	// slugs more than one holder shows: as the store last gave them.
	names    map[string]relay.MeshName
	byAgent  map[string]string
	contests []relay.MeshContest
	relays   map[string]dirRelay
	trust    map[string]relay.MeshRelay // admission records (the store's, cached)
	// trustGen counts the writes to trust (cacheTrust): a store write whose
	// cache write finds it moved on reads the store again rather than
	// putting back a record the store has left.
	trustGen  uint64
	conflicts []string
	// dirConflict: slug → why an entry for it was ignored.
	dirConflict map[string]string
	lastErr     string
	refused     map[string]int64
	refusedSeen map[string]bool
	refusals    []string
	warnings    []string
	// cred is what the relay's NATS credential was found to allow.
	cred CredentialCheck
	// streamWarn says how the stream or bucket differs from this relay's
	// settings when it may not change them.
	streamWarn string
	// natsErr is why the relay is not connected; joinErr why its invite
	// was refused.
	natsErr, joinErr string

	// urls are the NATS URLs connected to, without the embedded server's
	// user; invite is the invite they carried, if any.
	urls   []string
	invite *inviteToken
	// The embedded server: its options as started, who it admits, and the
	// privileged in-process connection that keeps the stream and bucket
	// and answers invited relays (nil without an embedded server).
	srvOpts   *server.Options
	adm       *admissions
	adminPass string
	admin     *nats.Conn

	// deniedMu guards the subjects waited on for a refusal (probe.go) and
	// the refusals already logged.
	deniedMu   sync.Mutex
	denied     map[string]chan struct{}
	deniedSeen map[string]bool

	// applyMu orders applying: the consumer and the release of held
	// envelopes never interleave.
	applyMu sync.Mutex
	// gaps are the messages waiting for an earlier one of their task
	// (gap.go).
	gaps gapWaits

	// pub is the publisher's state (publish.go); rescan asks it to read
	// the whole outbox (poke).
	pub    publisher
	rescan atomic.Bool

	// published counts the changes NATS stored (outbox rows), applied
	// and duplicates the changes received applied or recognised, held
	// the envelopes held; messages counts the messages NATS stored (one
	// carries a list of changes to a relay that reads them).
	published, applied, duplicates, failures, held atomic.Int64
	messages                                       atomic.Int64
	// saidLists says this relay's entry in the directory, as last
	// written, says it reads lists (withdrawLists).
	saidLists atomic.Bool
	// reads counts the publisher's reads of the outbox (the messages a
	// read sends: messages / reads).
	reads atomic.Int64
}

func (n *Node) now() time.Time { return n.opts.Now() }

// Start joins the mesh. It returns once the relay's identity is loaded, the
// embedded server (if any) runs and a NATS connection is being made; an
// invite is presented, and the stream, bucket and consumer are set up, in
// the background, retried until NATS answers, so a relay starts (and works
// locally) while NATS is down or has not admitted it yet. In strict mode
// it returns only once connected, with an error for a credential that can
// delete or purge what the mesh keeps.
func Start(opts Options) (*Node, error) {
	if opts.Store == nil {
		return nil, errors.New("mesh: a store is required")
	}
	if len(opts.URLs) == 0 && opts.Embed == "" {
		return nil, errors.New("mesh: give NATS URLs or an embedded server address")
	}
	if opts.Refresh <= 0 {
		opts.Refresh = DefaultRefresh
	}
	if opts.Replicas <= 0 {
		opts.Replicas = 1
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	id, err := LoadIdentity(opts.DataDir, opts.Name)
	if err != nil {
		return nil, err
	}
	n := &Node{opts: opts, id: id, log: log.With("relay", id.Name), kick: make(chan struct{}, 1), ready: make(chan struct{}), pub: newPublisher(),
		agents: map[string]dirAgent{}, good: map[string]dirAgent{}, relays: map[string]dirRelay{}, trust: map[string]relay.MeshRelay{},
		dirConflict: map[string]string{}, refused: map[string]int64{}, refusedSeen: map[string]bool{}}
	n.ctx, n.cancel = context.WithCancel(context.Background())
	fail := func(err error) (*Node, error) {
		n.cancel()
		n.wg.Wait()
		if n.nc != nil {
			n.nc.Close()
		}
		n.shutdownServer()
		return nil, err
	}
	urls := opts.URLs
	inProcess := false
	if opts.Embed != "" {
		if err := n.embed(); err != nil {
			return fail(err)
		}
		if len(urls) == 0 {
			urls, inProcess = []string{n.srv.ClientURL()}, true
		}
	}
	copts, err := n.connOptions(urls)
	if err != nil {
		return fail(err)
	}
	if inProcess {
		// Its own server, in this process: the connection is a pipe in
		// memory, not loopback TCP (the same user and permissions).
		copts = append(copts, nats.InProcessServer(n.srv))
	}
	if opts.Strict {
		if err := n.connectStrict(copts); err != nil {
			return fail(err)
		}
	} else {
		// The relay starts, and works locally, while NATS is down or has
		// not admitted it yet: the connection keeps trying.
		if n.nc, err = nats.Connect(strings.Join(n.urls, ","), append(copts, nats.RetryOnFailedConnect(true))...); err != nil {
			return fail(fmt.Errorf("mesh: connect to NATS: %w", err))
		}
	}
	n.wg.Add(1)
	go n.run()
	return n, nil
}

// Identity returns this relay's identity.
func (n *Node) Identity() Identity { return n.id }

// ClientURL is the embedded server's client URL, "" without one.
func (n *Node) ClientURL() string {
	if n.srv == nil {
		return ""
	}
	return n.srv.ClientURL()
}

// Ready is closed once the stream, directory and consumer are set up.
func (n *Node) Ready() <-chan struct{} { return n.ready }

// Close leaves the mesh: it stops the loops, drains the connection and stops
// the embedded server. Directory entries expire on their own.
func (n *Node) Close() error {
	n.cancel()
	n.wg.Wait()
	n.withdrawLists()
	n.nc.Close()
	n.shutdownServer()
	return nil
}

func (n *Node) shutdownServer() {
	if n.admin != nil {
		n.admin.Close()
	}
	if n.srv != nil {
		n.srv.Shutdown()
		n.srv.WaitForShutdown()
	}
}

// poke wakes the publisher without blocking, to read the whole outbox: rows
// that waited (for a relay to be trusted, for NATS) may go now.
func (n *Node) poke() {
	n.rescan.Store(true)
	n.nudge()
}

// nudge wakes the publisher without blocking after a commit: it reads the
// outbox if rows were added.
func (n *Node) nudge() {
	select {
	case n.kick <- struct{}{}:
	default:
	}
}

func (n *Node) setErr(op string, err error) {
	n.failures.Add(1)
	n.mu.Lock()
	n.lastErr = op + ": " + err.Error()
	n.mu.Unlock()
	n.log.Warn("mesh: "+op, "err", err)
}

// run sets up the JetStream side (retrying until NATS answers), then runs
// the directory, the consumer and the publisher until Close.
func (n *Node) run() {
	defer n.wg.Done()
	if n.needsJoin() {
		n.joinLoop()
	}
	for {
		if !n.nc.IsConnected() {
			n.waitingForNATS(nil)
			select {
			case <-n.ctx.Done():
				return
			case <-time.After(time.Second):
			}
			continue
		}
		err := n.setup()
		if err == nil {
			break
		}
		n.setErr("setup", err)
		select {
		case <-n.ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
	if err := n.releaseHeld(n.ctx, ""); err != nil && n.ctx.Err() == nil {
		n.setErr("deliver held envelopes", err)
	}
	close(n.ready)
	n.wg.Add(4)
	go n.watchDirectory()
	go n.refreshLoop()
	go n.publishLoop()
	go n.deleteLoop()
	n.consumeLoop()
}

func (n *Node) setup() error {
	ctx, cancel := context.WithTimeout(n.ctx, 4*opTimeout)
	defer cancel()
	js, err := jetstream.New(n.nc, n.publishOptions()...)
	if err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	n.checkOnce(ctx)
	if err := n.ensureStreams(ctx, js); err != nil {
		return err
	}
	kv, err := js.KeyValue(ctx, BucketName)
	if err != nil {
		return fmt.Errorf("open directory bucket %s: %w", BucketName, err)
	}
	if n.onOwnServer() && n.adm != nil {
		// The relays let in before the stream was there (a first start).
		records, err := n.opts.Store.MeshRelays(ctx)
		if err != nil {
			return fmt.Errorf("read relay admissions: %w", err)
		}
		n.adm.mu.Lock()
		ids := n.adm.authLocked(n.id, records, n.adminPass, n.now()).relays
		n.adm.mu.Unlock()
		if err := n.relayConsumers(ids); err != nil {
			return err
		}
	}
	// Made by the embedded server's relay for each relay it lets in; on a
	// cluster, by the relay itself on its first start.
	cons, err := js.Consumer(ctx, StreamName, consumerName(n.id.ID))
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		cons, err = js.CreateOrUpdateConsumer(ctx, StreamName, consumerConfig(n.id.ID, n.opts.Replicas))
	}
	if err != nil {
		return fmt.Errorf("create consumer: %w", err)
	}
	n.mu.Lock()
	n.js, n.kv, n.cons = js, kv, cons
	n.mu.Unlock()
	if err := n.loadTrust(ctx); err != nil {
		return err
	}
	if err := n.loadDirectory(ctx); err != nil {
		return err
	}
	if err := n.advertise(ctx); err != nil {
		return err
	}
	return nil
}

func subject(relayID string) string { return subjectPrefix + relayID }
