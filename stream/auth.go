package stream

import (
	"crypto/subtle"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/civnode/civnode/internal/logkey"
)

// TokenCheck says whether token is a node token that may read the node's
// stream (the owner's, an agent's or an observer's: what HTTP takes as a
// bearer token), and its id for the logs. It is called as a port client
// connects and again for every open connection each RevokeCheck, so it must
// be cheap, and it must never log the token.
type TokenCheck func(token string) (tokenID string, ok bool)

// RevokeCheck is how often the open port connections' tokens are checked
// again: a revoked token's connections close within it.
const RevokeCheck = 250 * time.Millisecond

// portAuth is the server's only way in (CustomClientAuthentication). The
// node's in-process connections log in as nodeUser with the password made
// for this run; every other client presents a node token as its NATS token,
// or as the password of any user, and is then a read-only port client.
type portAuth struct {
	did      string
	password string
	check    TokenCheck // nil: no port, nothing but the node's own connections
	log      *slog.Logger

	// Set once the server exists, before it starts; read-only after.
	ns         *server.Server
	node, port *server.Account
	perms      *server.Permissions

	mu    sync.Mutex
	conns map[uint64]portConn // open port clients, by NATS connection id
}

// portConn is what a port client's connection was let in with. The token is
// kept to check it again; it is never logged or reported.
type portConn struct {
	token, tokenID string
}

func newPortAuth(did, password string, check TokenCheck, log *slog.Logger) *portAuth {
	return &portAuth{did: did, password: password, check: check, log: log, conns: map[uint64]portConn{},
		perms: &server.Permissions{
			Publish:   &server.SubjectPermission{Deny: []string{">"}},
			Subscribe: &server.SubjectPermission{Allow: []string{nodeSubjects(did)}},
		}}
}

// bind looks up the accounts the clients are put in; NATS makes its own
// copies of the configured ones, so they are looked up on the server.
func (a *portAuth) bind(ns *server.Server) error {
	node, err := ns.LookupAccount(nodeAccount)
	if err != nil {
		return err
	}
	port, err := ns.LookupAccount(portAccount)
	if err != nil {
		return err
	}
	a.ns, a.node, a.port = ns, node, port
	return nil
}

// Check implements server.Authentication.
func (a *portAuth) Check(c server.ClientAuthentication) bool {
	if c.Kind() != server.CLIENT {
		return false
	}
	opts := c.GetOpts()
	if opts.Username == nodeUser && subtle.ConstantTimeCompare([]byte(opts.Password), []byte(a.password)) == 1 {
		c.RegisterUser(&server.User{Username: nodeUser, Account: a.node})
		return true
	}
	// Any other login, a user named as the node's included, is a port
	// client's: its token decides.
	if a.check == nil {
		return false
	}
	token := opts.Token
	if token == "" {
		token = opts.Password
	}
	if token == "" {
		return false
	}
	id, ok := a.check(token)
	if !ok {
		return false
	}
	c.RegisterUser(&server.User{Username: portUser, Account: a.port, Permissions: a.perms})
	a.mu.Lock()
	a.conns[c.GetID()] = portConn{token: token, tokenID: id}
	a.mu.Unlock()
	return true
}

// sweep closes the connections whose token no longer authenticates (it was
// revoked or rotated) and forgets the connections that are gone.
func (a *portAuth) sweep() {
	a.mu.Lock()
	open := make(map[uint64]portConn, len(a.conns))
	for id, c := range a.conns {
		open[id] = c
	}
	a.mu.Unlock()
	var gone []uint64
	for id, c := range open {
		if a.ns.GetClient(id) == nil {
			gone = append(gone, id)
			continue
		}
		if _, ok := a.check(c.token); ok {
			continue
		}
		if err := a.ns.DisconnectClientByID(id); err == nil {
			a.log.Info("nats port client dropped: its token no longer authenticates", logkey.Conn, id, logkey.TokenID, c.tokenID)
		}
		gone = append(gone, id)
	}
	if len(gone) == 0 {
		return
	}
	a.mu.Lock()
	for _, id := range gone {
		delete(a.conns, id)
	}
	a.mu.Unlock()
}

// watchTokens sweeps every RevokeCheck until stop closes.
func (a *portAuth) watchTokens(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	if a.check == nil {
		<-stop
		return
	}
	t := time.NewTicker(RevokeCheck)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			a.sweep()
		}
	}
}
