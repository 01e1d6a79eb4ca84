package stream

import (
	"github.com/civnode/civnode/internal/logkey"
	"net"
	"strconv"
	"strings"
	"time"
)

// PeerChange is a leaf link going up or down.
type PeerChange struct {
	Connected bool
	Kind      string // "leaf"
	Remote    string // the remote server's address, host:port; never credentials
	ServerID  string // the remote server's NATS server id, when known
	Name      string // the remote server's name, when known
}

// PeerKindLeaf is the Kind of a leaf-node link.
const PeerKindLeaf = "leaf"

// pollLeafs looks at the server's leaf connections every interval and reports
// each one that appeared or went away. NATS has no callback for a leaf link
// (its system events for leaf connects exist only with gateways), so this is a
// poll; a link that drops and comes back within one interval shows as a new
// connection id, so it is reported as down, then up.
func (s *Server) pollLeafs(interval time.Duration, onPeer func(PeerChange)) {
	defer close(s.pollDone)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		for _, c := range s.leafChanges() {
			s.log.Info("nats leaf link "+map[bool]string{true: "up", false: "down"}[c.Connected],
				logkey.Remote, c.Remote, logkey.Name, c.Name)
			if onPeer != nil {
				onPeer(c)
			}
		}
		select {
		case <-s.stopPoll:
			return
		case <-t.C:
		}
	}
}

// leafLink is a leaf connection that is up, and when it was first seen.
type leafLink struct {
	PeerChange
	since time.Time
}

// leafChanges compares the server's leaf connections with the last look.
func (s *Server) leafChanges() []PeerChange {
	lz, err := s.ns.Leafz(nil)
	if err != nil {
		s.log.Warn("list nats leaf links", logkey.Err, err)
		return nil
	}
	seen := time.Now().UTC()
	now := make(map[uint64]leafLink, len(lz.Leafs))
	for _, l := range lz.Leafs {
		now[l.ID] = leafLink{PeerChange: PeerChange{
			Connected: true,
			Kind:      PeerKindLeaf,
			Remote:    net.JoinHostPort(l.IP, strconv.Itoa(l.Port)),
			ServerID:  serverIDOf(l.Name),
			Name:      l.Name,
		}, since: seen}
	}
	var changes []PeerChange
	kept := false // a link up at the last look is still up
	s.mu.Lock()
	for id, c := range s.leafs {
		if _, ok := now[id]; !ok {
			c.Connected = false
			changes = append(changes, c.PeerChange)
		} else {
			now[id] = c // keeps its since
			kept = true
		}
	}
	for id, c := range now {
		if _, ok := s.leafs[id]; !ok {
			changes = append(changes, c.PeerChange)
		}
	}
	// A link that dropped and came back between two looks went down and up.
	if (len(s.leafs) > 0) != (len(now) > 0) || len(now) > 0 && !kept {
		s.leafSince = seen
	}
	s.leafs = now
	s.mu.Unlock()
	return changes
}

// LeafLink is the state of the configured leaf link (Options.LeafURL).
type LeafLink struct {
	// Remote is the configured host:port, without credentials, whatever
	// address the link is up to: a label that stays put for a metric.
	Remote string
	Up     bool
	// Since is when the link last went up or down; the server's start while
	// it has never been up.
	Since time.Time
}

// LeafLink reports the configured leaf link as of the last look (every
// Options.LeafPoll); false without Options.LeafURL.
func (s *Server) LeafLink() (LeafLink, bool) {
	if s.leafRemote == "" {
		return LeafLink{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return LeafLink{Remote: s.leafRemote, Up: len(s.leafs) > 0, Since: s.leafSince}, true
}

// serverIDOf: a NATS server without a configured server_name goes by its
// server id, a public server nkey ('N' and 55 more base32 characters); that is
// the only way the leaf link learns the id.
func serverIDOf(name string) string {
	if len(name) != 56 || name[0] != 'N' || strings.Trim(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") != "" {
		return ""
	}
	return name
}
