package localnode

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"

	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/cmd/civnode/internal/doctor"
	civhttp "github.com/civnode/civnode/http"
)

// channelNode is the node channel as doctor asks a running node.
type channelNode struct{ ch *civhttp.Client }

// Reach opens the owner's channel to the node running on dir as doctor asks
// it (doctor.Options.Reach), without logging how it got there.
func Reach(ctx context.Context, dir datadir.Dir, addr string) (doctor.Node, error) {
	ch, err := Dial(ctx, dir, addr, slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, err
	}
	return channelNode{ch}, nil
}

// ProveConn has the process on conn prove it holds pub's key, and then
// makes a channel of conn alone (doctor.Options.Prove).
func ProveConn(ctx context.Context, conn net.Conn, addr string, pub ed25519.PublicKey, token string) (doctor.Node, error) {
	if err := civhttp.ProveNode(ctx, conn, addr, pub); err != nil {
		return nil, err
	}
	fail := func(context.Context) (net.Conn, error) { return nil, errors.New("one proven connection is enough") }
	return channelNode{civhttp.NewClient("http://"+addr, token, addr, conn, fail)}, nil
}

func (n channelNode) Via() string { return n.ch.Via }
func (n channelNode) Close()      { n.ch.Close() }

// Get makes one GET through the channel and returns the status and body.
func (n channelNode) Get(ctx context.Context, path string, owner bool) (int, []byte, error) {
	var req *http.Request
	var err error
	if owner {
		req, err = n.ch.NewRequest(ctx, http.MethodGet, path, nil)
	} else {
		req, err = http.NewRequestWithContext(ctx, http.MethodGet, n.ch.Base+path, nil)
	}
	if err != nil {
		return 0, nil, err
	}
	resp, err := n.ch.HTTP.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return 0, nil, fmt.Errorf("read the answer to GET %s: %w", path, err)
	}
	return resp.StatusCode, body, nil
}
